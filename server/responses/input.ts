// Responses input → the gateway's chat messages. `input` is a string (one user message) or
// typed items: messages (text, image and file parts), function calls and their outputs,
// and output items of an earlier response sent back as history (reasoning items and
// generated images are kept as history but not sent to the model again).
import { ApiError } from '../errors.js';
import { unsafeScheme } from '../gateway/image-urls.js';
import type { ChatMessage, ContentPart } from '../providers/types.js';
import type { InputContent, InputItem, ResponseBody } from './types.js';

/** The request's `input` as items. */
export function inputItems(input: ResponseBody['input']): InputItem[] {
  return typeof input === 'string' ? [{ type: 'message', role: 'user', content: input }] : input;
}

export function toMessages(items: readonly InputItem[]): ChatMessage[] {
  const messages: ChatMessage[] = [];
  items.forEach((item, index) => {
    if (!('type' in item) || item.type === 'message' || item.type === undefined) {
      const message = item as Extract<InputItem, { role: string }>;
      const role = message.role === 'developer' || message.role === 'system' ? 'system' : message.role;
      messages.push({ role, content: contentOf(message.content, `input[${index}].content`) });
      return;
    }
    switch (item.type) {
      case 'function_call': {
        const call = { id: item.call_id, type: 'function' as const, function: { name: item.name, arguments: item.arguments } };
        // Calls of one turn belong to one assistant message, before their outputs.
        const last = messages.at(-1);
        if (last?.role === 'assistant') last.tool_calls = [...(last.tool_calls ?? []), call];
        else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
        return;
      }
      case 'function_call_output':
        messages.push({ role: 'tool', tool_call_id: item.call_id, content: item.output });
        return;
      // History only: a reasoning state is opaque to other models, an image was already shown.
      case 'reasoning':
      case 'image_generation_call':
        return;
    }
  });
  return messages;
}

function contentOf(content: string | InputContent[], param: string): ChatMessage['content'] {
  if (typeof content === 'string') return content;
  const parts = content.map((part, index) => partOf(part, `${param}[${index}]`));
  // Text-only content goes as one string: every upstream takes that.
  if (parts.every((p) => p.type === 'text')) return parts.map((p) => (p as { text: string }).text).join('\n');
  return parts;
}

function partOf(part: InputContent, param: string): ContentPart {
  switch (part.type) {
    case 'input_text':
    case 'output_text':
      return { type: 'text', text: part.text };
    case 'refusal':
      return { type: 'text', text: part.refusal };
    case 'input_image': {
      const url = part.image_url;
      if (url === undefined) throw new ApiError('INVALID_REQUEST', 'input_image needs image_url (an https or base64 data: URL); file_id is not served on this platform.', { param });
      const scheme = unsafeScheme(url);
      if (scheme) throw new ApiError('INVALID_REQUEST', scheme, { param: `${param}.image_url` });
      return { type: 'image_url', image_url: { url, ...(part.detail ? { detail: part.detail } : {}) } };
    }
    case 'input_file':
      return { type: 'text', text: fileText(part, param) };
  }
}

const TEXT_MEDIA = /^(text\/[\w.+-]+|application\/(json|xml|yaml|x-yaml|csv|x-ndjson))$/i;

/** A text file given inline becomes text of the prompt; anything else is refused by name. */
function fileText(part: Extract<InputContent, { type: 'input_file' }>, param: string): string {
  const name = part.filename ?? 'file';
  if (part.file_data === undefined) {
    throw new ApiError('INVALID_REQUEST', `input_file ${name}: only inline file_data (a base64 data: URL) is served on this platform, not file_id or file_url.`, { param });
  }
  const match = /^data:([^;,]+)(?:;[^,]*)?;base64,(.*)$/s.exec(part.file_data);
  if (!match) throw new ApiError('INVALID_REQUEST', `input_file ${name}: file_data must be a base64 data: URL.`, { param: `${param}.file_data` });
  if (!TEXT_MEDIA.test(match[1])) {
    throw new ApiError('INVALID_REQUEST', `input_file ${name}: ${match[1]} files are not read on this platform; send text files (text/*, JSON, XML, YAML, CSV).`, { param: `${param}.file_data` });
  }
  return `File ${name}:\n${Buffer.from(match[2], 'base64').toString('utf8')}`;
}
