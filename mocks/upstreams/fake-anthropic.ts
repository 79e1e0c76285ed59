// Fake Anthropic Messages API over real HTTP, for adapter, gateway and benchmark tests.
//
//   const up = await startFakeAnthropic({ answer: 'Hello there.' });   // up.url is the base URL
//   POST /v1/messages   plain or streamed (message_start … message_stop, text word by word)
//   GET  /v1/models
// Prompt caching: the prompt up to the last block with `cache_control` is written to the
// fake's cache on first sight and read from it after (usage: cache_creation_input_tokens,
// cache_read_input_tokens; input_tokens counts only the rest), as Anthropic reports it.
// tool_choice {type:'any'} or {type:'tool'} produces a tool_use block with input
// {"input": <last user text>}. A trailing assistant message is continued (prefill), unless it
// ends in whitespace: the real API answers that with 400. A last user turn asking to continue
// a quoted opening of the answer gets the rest of it (see continuationAsked in faults.ts).
// Faults and recording: see faults.ts.
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

const ERRORS: Record<ErrorKind, { type: string; message: string }> = {
  rate_limit: { type: 'rate_limit_error', message: 'Number of request tokens has exceeded your per-minute rate limit' },
  server: { type: 'api_error', message: 'Internal server error' },
  unavailable: { type: 'overloaded_error', message: 'Overloaded' },
  auth: { type: 'authentication_error', message: 'invalid x-api-key' },
  context_length: { type: 'invalid_request_error', message: 'prompt is too long: 210000 tokens > 200000 maximum' },
  content_filter: { type: 'invalid_request_error', message: 'Output blocked by content filtering policy' },
  bad_request: { type: 'invalid_request_error', message: 'temperature: Input should be less than or equal to 1' },
  prefix: { type: 'invalid_request_error', message: 'This model does not support assistant message prefill.' },
};

const STREAM_ERRORS: Record<StreamErrorKind, ErrorKind> = { rate_limit: 'rate_limit', overloaded: 'unavailable', server: 'server', auth: 'auth', bad_request: 'bad_request' };

const frame = (data: { type: string } & Record<string, unknown>) => `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;

const dialect: Dialect = {
  errorBody: (kind, message) => ({ type: 'error', error: { type: ERRORS[kind].type, message: message || ERRORS[kind].message } }),
  errorFrame: (kind, message) => {
    const error = ERRORS[STREAM_ERRORS[kind]];
    return frame({ type: 'error', error: { ...error, message: message || error.message } });
  },
  malformedFrame: 'event: content_block_delta\ndata: {not json\n\n',
  pingFrame: frame({ type: 'ping' }),
  openingFrames: 2,
  apiKey: (headers) => headers['x-api-key'] as string | undefined,
};

interface MessagesBody {
  model?: string;
  system?: unknown;
  messages?: { role: string; content: unknown }[];
  tools?: { name: string }[];
  tool_choice?: { type: string; name?: string };
  stream?: boolean;
}

export function startFakeAnthropic(config: Partial<FakeConfig> = {}): Promise<FakeUpstream> {
  return startUpstream(dialect, route, config);
}

async function route(call: Call): Promise<void> {
  const { recorded, res } = call;
  const path = recorded.path.split('?')[0];
  if (recorded.method === 'GET' && path === '/v1/models') {
    return sendJson(res, 200, { data: [{ type: 'model', id: 'fake-claude', display_name: 'Fake Claude' }], has_more: false });
  }
  if (recorded.method === 'POST' && path === '/v1/messages') return messages(call);
  sendJson(res, 404, dialect.errorBody('server', `Unknown path ${path}`));
}

async function messages(call: Call): Promise<void> {
  const body = call.recorded.body as MessagesBody;
  const model = body.model ?? 'unknown';
  const history = body.messages ?? [];
  const last = history.at(-1);
  const prefill = last?.role === 'assistant' ? blockText(last.content) : undefined;
  if (prefill !== undefined && /\s$/.test(prefill)) {
    return sendJson(call.res, 400, dialect.errorBody('prefix', 'messages: final assistant content cannot end with trailing whitespace'));
  }
  const answer = answerText(call.config, model);
  const asked = last?.role === 'user' ? continuationAsked(call.config, answer, promptText(last.content)) : undefined;
  const text = asked ?? continuation(answer, prefill);
  const tool = body.tool_choice?.type === 'tool' ? body.tool_choice.name : body.tool_choice?.type === 'any' ? body.tools?.[0]?.name : undefined;
  // Only the user's own words: tool results ride in user turns too.
  const lastUser = history.filter((m) => m.role === 'user').at(-1)?.content;
  const userText = promptText(Array.isArray(lastUser) ? lastUser.filter((b: { type?: string }) => b.type === 'text') : lastUser).trim();
  const input = { input: userText };
  const stopReason = tool ? 'tool_use' : call.fault?.type === 'content_filter_finish' ? 'refusal' : 'end_turn';
  const pieces = tool ? [] : streamPieces(call.config, text);
  const usage = {
    ...cacheUsage(call, body, countTokens(promptText(body.system) + promptText(history))),
    output_tokens: tool ? countTokens(JSON.stringify(input)) : pieces.length,
  };
  const toolBlock = tool && { type: 'tool_use', id: 'toolu_fake_1', name: tool, input };
  const message = { id: 'msg_fake', type: 'message', role: 'assistant', model, stop_sequence: null };

  if (!body.stream) {
    await firstTokenDelay(call.fault);
    return sendJson(call.res, 200, { ...message, content: [toolBlock ?? { type: 'text', text }], stop_reason: stopReason, usage });
  }

  const frames = [frame({ type: 'message_start', message: { ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } } })];
  if (toolBlock) {
    frames.push(frame({ type: 'content_block_start', index: 0, content_block: { ...toolBlock, input: {} } }));
    for (const part of halves(JSON.stringify(input))) {
      frames.push(frame({ type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: part } }));
    }
  } else {
    frames.push(frame({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }), frame({ type: 'ping' }));
    for (const piece of pieces) frames.push(frame({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: piece } }));
  }
  frames.push(
    frame({ type: 'content_block_stop', index: 0 }),
    frame({ type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: usage.output_tokens } }),
  );
  await writeSse(call, dialect, frames, [frame({ type: 'message_stop' })]);
}

interface CacheBlock {
  cache_control?: { type: string; ttl?: string };
}

/**
 * Anthropic's prompt caching, simplified to the last breakpoint: the prompt (system, then
 * the messages' blocks) up to and including the last block with `cache_control` is read when
 * it was written before, else written (for an hour with `ttl: '1h'`). `input_tokens` is what
 * is neither, out of `total`.
 */
function cacheUsage(call: Call, body: MessagesBody, total: number) {
  const asBlocks = (content: unknown): CacheBlock[] => (Array.isArray(content) ? content : []);
  const blocks = [...asBlocks(body.system), ...(body.messages ?? []).flatMap((m) => asBlocks(m.content))];
  let last = blocks.length - 1;
  while (last >= 0 && !blocks[last].cache_control) last--;
  if (last < 0) return { input_tokens: total };
  const prefix = blocks.slice(0, last + 1);
  const tokens = countTokens(promptText(prefix));
  const key = JSON.stringify([body.model, prefix]);
  const hit = call.promptCache.has(key);
  call.promptCache.add(key);
  if (hit) return { input_tokens: total - tokens, cache_creation_input_tokens: 0, cache_read_input_tokens: tokens };
  const hour = blocks[last].cache_control!.ttl === '1h';
  return {
    input_tokens: total - tokens,
    cache_creation_input_tokens: tokens,
    cache_read_input_tokens: 0,
    cache_creation: { ephemeral_5m_input_tokens: hour ? 0 : tokens, ephemeral_1h_input_tokens: hour ? tokens : 0 },
  };
}

/** The text of a message's content: a string, or its text blocks. */
function blockText(content: unknown): string {
  if (typeof content === 'string') return content;
  return Array.isArray(content) ? content.map((b: { type?: string; text?: string }) => (b.type === 'text' ? (b.text ?? '') : '')).join('') : '';
}
