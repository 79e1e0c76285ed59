// Fake OpenAI-compatible upstream over real HTTP, for adapter, gateway and benchmark tests.
//
//   const up = await startFakeOpenAI({ answer: 'Hello there.' });   // up.url + '/v1' is the base URL
//   POST /v1/chat/completions   plain or streamed (word by word, usage chunk, [DONE])
//     A trailing assistant message is continued only when asked the way vLLM
//     (`continue_final_message: true`, `add_generation_prompt: false`; the first alone is
//     vLLM's 400) or Mistral/DeepSeek (`prefix: true` on it) are; otherwise it gets a fresh
//     reply, as from OpenAI itself. A last user turn asking to continue a quoted opening
//     of the answer gets the rest of it (see continuationAsked in faults.ts).
//   POST /v1/embeddings         a deterministic unit vector per input, `dimensions` honoured (default 8)
//   GET  /v1/models
//   Azure shape: /openai/deployments/{model}/chat/completions|embeddings?api-version=…
// Tools forced by tool_choice 'required' or a named function produce a tool call whose
// arguments are {"input": <last user text>}; `config.refuse` makes the answer a refusal.
// Faults and recording: see faults.ts.
import type { IncomingHttpHeaders } from 'node:http';
import {
  answerText,
  continuation,
  continuationAsked,
  countTokens,
  firstTokenDelay,
  halves,
  promptText,
  sendJson,
  startUpstream,
  streamPieces,
  writeSse,
  type Call,
  type Dialect,
  type ErrorKind,
  type FakeConfig,
  type FakeUpstream,
  type StreamErrorKind,
} from './faults.js';

const ERRORS: Record<ErrorKind, { type: string; code: string | null; message: string }> = {
  rate_limit: { type: 'requests', code: 'rate_limit_exceeded', message: 'Rate limit reached for requests' },
  server: { type: 'server_error', code: null, message: 'The server had an error while processing your request.' },
  unavailable: { type: 'server_error', code: 'service_unavailable', message: 'The engine is currently overloaded.' },
  auth: { type: 'invalid_request_error', code: 'invalid_api_key', message: 'Incorrect API key provided.' },
  context_length: {
    type: 'invalid_request_error',
    code: 'context_length_exceeded',
    message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
  },
  content_filter: {
    type: 'invalid_request_error',
    code: 'content_filter',
    message: "The response was filtered due to the prompt triggering the content management policy.",
  },
  bad_request: { type: 'invalid_request_error', code: 'invalid_value', message: "Invalid value for 'temperature': expected a number." },
  prefix: { type: 'invalid_request_error', code: null, message: 'The last message must be a user or tool message.' },
};

const STREAM_ERRORS: Record<StreamErrorKind, ErrorKind> = { rate_limit: 'rate_limit', overloaded: 'unavailable', server: 'server', auth: 'auth', bad_request: 'bad_request' };

const dialect: Dialect = {
  errorBody: (kind, message) => ({ error: { ...ERRORS[kind], message: message || ERRORS[kind].message, param: null } }),
  errorFrame: (kind, message) => {
    const error = ERRORS[STREAM_ERRORS[kind]];
    return `data: ${JSON.stringify({ error: { ...error, message: message || error.message } })}\n\n`;
  },
  malformedFrame: 'data: {not json\n\n',
  pingFrame: ': keep-alive\n\n',
  openingFrames: 1,
  apiKey: (headers: IncomingHttpHeaders) =>
    (headers['api-key'] as string | undefined) ?? headers.authorization?.replace(/^Bearer /, ''),
};

interface ChatBody {
  model?: string;
  messages?: { role: string; content: unknown; prefix?: boolean }[];
  continue_final_message?: boolean;
  add_generation_prompt?: boolean;
  tools?: { function: { name: string } }[];
  tool_choice?: unknown;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  prompt_cache_key?: string;
}

export function startFakeOpenAI(config: Partial<FakeConfig> = {}): Promise<FakeUpstream> {
  return startUpstream(dialect, route, config);
}

async function route(call: Call): Promise<void> {
  const { recorded, res } = call;
  const path = recorded.path.split('?')[0];
  // Azure names the model in the path.
  const deployment = /\/deployments\/([^/]+)\//.exec(path)?.[1];
  if (recorded.method === 'GET' && path.endsWith('/models')) {
    return sendJson(res, 200, { object: 'list', data: [{ id: 'fake-model', object: 'model', owned_by: 'fake' }] });
  }
  if (recorded.method === 'POST' && path.endsWith('/chat/completions')) return chat(call, deployment);
  if (recorded.method === 'POST' && path.endsWith('/embeddings')) return embeddings(call, deployment);
  sendJson(res, 404, dialect.errorBody('server', `Unknown path ${path}`));
}

async function chat(call: Call, deployment: string | undefined): Promise<void> {
  const body = call.recorded.body as ChatBody;
  const model = deployment ?? body.model ?? 'unknown';
  const messages = body.messages ?? [];
  const last = messages.at(-1);
  const trailing = last?.role === 'assistant' && typeof last.content === 'string' ? last.content : undefined;
  if (body.continue_final_message && body.add_generation_prompt !== false) {
    return sendJson(call.res, 400, dialect.errorBody('bad_request', 'Cannot set both `continue_final_message` and `add_generation_prompt` to True.'));
  }
  const prefix = body.continue_final_message || last?.prefix === true ? trailing : undefined;
  const answer = answerText(call.config, model);
  const asked = last?.role === 'user' ? continuationAsked(call.config, answer, promptText(last.content)) : undefined;
  const text = asked ?? continuation(answer, prefix);
  const tool = forcedTool(body);
  const toolArgs = JSON.stringify({ input: promptText(messages.filter((m) => m.role === 'user').at(-1)?.content).trim() });
  const finish = tool ? 'tool_calls' : call.fault?.type === 'content_filter_finish' ? 'content_filter' : 'stop';
  const pieces = tool ? [] : streamPieces(call.config, text);
  const usage = tokenUsage(countTokens(promptText(messages)), tool ? countTokens(toolArgs) : pieces.length, cachedTokens(call, body));
  const id = 'chatcmpl-fake';
  const created = Math.floor(Date.now() / 1000);
  const toolCall = tool && { id: 'call_fake_1', type: 'function', function: { name: tool, arguments: toolArgs } };
  const refusing = call.config.refuse === true && !tool;

  if (!body.stream) {
    await firstTokenDelay(call.fault);
    return sendJson(call.res, 200, {
      id,
      object: 'chat.completion',
      created,
      model,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: tool || refusing ? null : text, refusal: refusing ? text : null, ...(toolCall ? { tool_calls: [toolCall] } : {}) },
          finish_reason: finish,
        },
      ],
      ...(call.config.omitUsage ? {} : { usage }),
    });
  }

  const chunk = (delta: unknown, finishReason: string | null = null) =>
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`;
  const frames = [chunk({ role: 'assistant', content: '' })];
  if (toolCall) {
    frames.push(chunk({ tool_calls: [{ index: 0, id: toolCall.id, type: 'function', function: { name: tool, arguments: '' } }] }));
    for (const part of halves(toolArgs)) frames.push(chunk({ tool_calls: [{ index: 0, function: { arguments: part } }] }));
  }
  for (const piece of pieces) frames.push(chunk(refusing ? { refusal: piece } : { content: piece }));
  frames.push(chunk({}, finish));
  if (body.stream_options?.include_usage && !call.config.omitUsage) {
    frames.push(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage })}\n\n`);
  }
  await writeSse(call, dialect, frames, ['data: [DONE]\n\n']);
}

function tokenUsage(prompt: number, completion: number, cached: number | undefined) {
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    ...(cached === undefined ? {} : { prompt_tokens_details: { cached_tokens: cached, audio_tokens: 0 } }),
  };
}

/**
 * With `promptCaching`: the tokens of the messages before the last one when this prefix (and
 * prompt_cache_key) was seen before, else 0, and the prefix is cached; without it, undefined.
 */
function cachedTokens(call: Call, body: ChatBody): number | undefined {
  if (!call.config.promptCaching) return undefined;
  const prefix = (body.messages ?? []).slice(0, -1);
  if (prefix.length === 0) return 0;
  const key = JSON.stringify([body.model, body.prompt_cache_key ?? null, prefix]);
  const hit = call.promptCache.has(key);
  call.promptCache.add(key);
  return hit ? countTokens(promptText(prefix)) : 0;
}

/** The tool the request forces, if any: a named function, or the first tool when 'required'. */
function forcedTool(body: ChatBody): string | undefined {
  const choice = body.tool_choice as { function?: { name?: string } } | string | undefined;
  if (typeof choice === 'object' && choice?.function?.name) return choice.function.name;
  return choice === 'required' ? body.tools?.[0]?.function.name : undefined;
}

function embeddings(call: Call, deployment: string | undefined): void {
  const body = call.recorded.body as { model?: string; input?: string | string[]; dimensions?: number };
  const inputs = typeof body.input === 'string' ? [body.input] : (body.input ?? []);
  sendJson(call.res, 200, {
    object: 'list',
    model: deployment ?? body.model,
    data: inputs.map((input, index) => ({ object: 'embedding', index, embedding: fakeVector(input, body.dimensions ?? 8) })),
    ...(call.config.omitUsage ? {} : { usage: { prompt_tokens: countTokens(inputs.join(' ')), total_tokens: countTokens(inputs.join(' ')) } }),
  });
}

/** A unit vector seeded by the text (FNV-1a + xorshift), so equal inputs embed equally. */
export function fakeVector(text: string, dimensions: number): number[] {
  let seed = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) seed = Math.imul(seed ^ text.charCodeAt(i), 0x01000193) >>> 0;
  const values: number[] = [];
  for (let i = 0; i < dimensions; i++) {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    seed >>>= 0;
    values.push(seed / 0xffffffff - 0.5);
  }
  const norm = Math.hypot(...values) || 1;
  return values.map((v) => v / norm);
}
