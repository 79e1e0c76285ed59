// The rest of a Responses request → the gateway's provider request: tools in the flat
// Responses form, tool_choice, text.format, limits. The `image_generation` tool reaches
// the model as a function it may call with a prompt; the platform then draws the image
// (images.ts). Built-in tools the platform does not run are refused by name, in `tools`
// and in `tool_choice`; so is `background` mode.
import { ApiError } from '../errors.js';
import type { ChatMessage, ChatRequest, ResponseFormat, ToolChoice, ToolDefinition } from '../providers/types.js';
import type { ImageGenerationTool, ResponseBody } from './types.js';

/** The function the model calls to ask for an image (never shown to the caller as a function call). */
export const IMAGE_FUNCTION = 'image_generation';

const IMAGE_FUNCTION_DEFINITION: ToolDefinition = {
  type: 'function',
  function: {
    name: IMAGE_FUNCTION,
    description: 'Generate an image (a picture, drawing, illustration or photo) from a description of what it shows.',
    parameters: {
      type: 'object',
      properties: { prompt: { type: 'string', description: 'What the image shows, in detail.' } },
      required: ['prompt'],
      additionalProperties: false,
    },
  },
};

export interface ProviderRequest {
  request: Omit<ChatRequest, 'model'>;
  /** The `image_generation` tool, when offered. */
  imageTool: ImageGenerationTool | undefined;
}

export function providerRequest(body: ResponseBody, messages: ChatMessage[]): ProviderRequest {
  // Answered here rather than ignored: the caller would otherwise wait for an answer to poll.
  if (body.background === true) {
    throw new ApiError('INVALID_REQUEST', 'background mode is not supported: a response is answered within its request; leave background out or false.', {
      param: 'background',
    });
  }
  const tools: ToolDefinition[] = [];
  let imageTool: ImageGenerationTool | undefined;
  (body.tools ?? []).forEach((tool, index) => {
    if (isFunctionTool(tool)) {
      tools.push({ type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.parameters, strict: tool.strict } });
    } else if (isImageTool(tool)) {
      imageTool = tool;
      tools.push(IMAGE_FUNCTION_DEFINITION);
    } else {
      throw new ApiError(
        'INVALID_REQUEST',
        `The ${tool.type} tool is a built-in tool this platform does not run; remove it from tools (function tools and image_generation are supported).`,
        { param: `tools[${index}]` },
      );
    }
  });
  return {
    request: {
      messages,
      maxTokens: body.max_output_tokens,
      temperature: body.temperature,
      topP: body.top_p,
      tools: tools.length ? tools : undefined,
      toolChoice: toolChoice(body.tool_choice, imageTool !== undefined),
      parallelToolCalls: body.parallel_tool_calls,
      responseFormat: responseFormat(body.text?.format),
      reasoningEffort: body.reasoning?.effort,
      user: body.user,
      promptCacheKey: body.prompt_cache_key,
    },
    imageTool,
  };
}

function toolChoice(choice: ResponseBody['tool_choice'], hasImageTool: boolean): ToolChoice | undefined {
  if (choice === undefined || typeof choice === 'string') return choice;
  if (choice.type === 'image_generation') {
    if (!hasImageTool) throw new ApiError('INVALID_REQUEST', 'tool_choice image_generation needs the image_generation tool in tools.', { param: 'tool_choice' });
    return { type: 'function', function: { name: IMAGE_FUNCTION } };
  }
  if (choice.type === 'function' && 'name' in choice) return { type: 'function', function: { name: choice.name } };
  throw new ApiError(
    'INVALID_REQUEST',
    `tool_choice ${choice.type} names a built-in tool this platform does not run; choose auto, none, required, a function or image_generation.`,
    { param: 'tool_choice' },
  );
}

// The contract tells tools apart by `type` (a built-in tool's is any other string).
type Tool = NonNullable<ResponseBody['tools']>[number];
const isFunctionTool = (tool: Tool): tool is Extract<Tool, { name: string }> => tool.type === 'function';
const isImageTool = (tool: Tool): tool is ImageGenerationTool => tool.type === 'image_generation';

function responseFormat(format: NonNullable<ResponseBody['text']>['format']): ResponseFormat | undefined {
  if (!format || format.type === 'text') return undefined;
  if (format.type === 'json_object') return { type: 'json_object' };
  return { type: 'json_schema', json_schema: { name: format.name, schema: format.schema, strict: format.strict, description: format.description } };
}
