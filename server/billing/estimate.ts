// What a request may cost at most, before routing: the worst case admission holds (billing)
// and counts (tokens per minute). The prompt is counted as the gateway counts it
// (server/providers/local/tokens.ts) over everything the model will be sent: the messages
// with the tradition instruction of guarded routes, tool definitions and response schemas,
// the stored conversation a follow-up continues, and for grounded requests room for every
// passage `sources_limit` allows. Images count a fixed IMAGE_HOLD_TOKENS each (their
// base64 is never read as text). The output is `max_tokens` (or the model's output limit,
// at most 4,096), priced at the model the request names or its most expensive candidate;
// each image the `image_generation` tool may draw adds the model's per-image price.
import type { Response } from 'express';
import { routesById, type RouteDefinition } from '../../generated/contract/routes.js';
import { GROUNDING_DEFAULTS } from '../data/grounding/grounded-completions.js';
import { groundingMessage } from '../data/grounding/prompt.js';
import { MAX_TOKENS as MAX_PASSAGE_TOKENS } from '../data/ingestion/pipeline.js';
import type { Catalog, ModelConfig } from '../gateway/catalog.js';
import { withTradition, type Tradition } from '../gateway/tradition.js';
import { estimateMessageTokens, estimateTokens, IMAGE_TOKENS } from '../providers/local/tokens.js';
import type { ChatMessage } from '../providers/types.js';
import { inputItems, toMessages } from '../responses/input.js';
import { providerRequest } from '../responses/request.js';
import type { ResponseBody } from '../responses/types.js';
import { costMicros, estimateModel, estimateOutputTokens } from './pricing.js';

/**
 * What one input image is held at: the most a provider charges for one (Anthropic's ~1,600
 * for a full-size image; OpenAI's high detail stays below), unless it is sent at low detail.
 */
export const IMAGE_HOLD_TOKENS = 1_600;
/** A passage's title and `<source>` markup around its text, beyond the passage itself. */
const SOURCE_MARKUP_TOKENS = 64;

export interface RequestEstimate {
  model: ModelConfig | undefined;
  promptTokens: number;
  outputTokens: number;
  /** Images the request may have drawn (the image_generation tool). */
  images: number;
  micros: bigint;
}

/** The conversations a request continues, read where they are kept. */
export interface PromptHistory {
  /** Tokens of the stored conversation `previous_response_id` names (0 when unknown: the request is refused later). */
  response(organizationId: string, responseId: string): Promise<number>;
  /** Tokens of the chat's recent messages a Chat API message is sent with (0 for a new or unknown chat). */
  chat(organizationId: string, chatId: string): Promise<number>;
}

type Body = Record<string, unknown>;

const DIRECT = new Set(['createChatCompletionV1', 'createResponseV1']);
const GROUNDED = new Set(['createGroundedChatCompletion', 'createGroundedChatCompletionAlias', 'createGroundedResponse', 'sendChatMessage']);

function kindOf(route: RouteDefinition): 'embeddings' | 'chat' | 'responses' | 'message' {
  if (route.operationId === 'sendChatMessage') return 'message';
  const tag = route.replacedBy ? routesById[route.replacedBy].tag : route.tag;
  return tag === 'embeddings' ? 'embeddings' : tag === 'responses' ? 'responses' : 'chat';
}

/** The request's worst case; `historyTokens`: the conversation it continues (PromptHistory). */
export function estimateRequest(catalog: Catalog, route: RouteDefinition, body: Body, historyTokens = 0): RequestEstimate {
  const kind = kindOf(route);
  if (kind === 'embeddings') {
    const model = estimateModel(catalog, body, 'embedding');
    const input = typeof body.input === 'string' ? [body.input] : Array.isArray(body.input) ? body.input : [];
    const promptTokens = input.reduce<number>((sum, text) => sum + (typeof text === 'string' ? estimateTokens(text) : 0), 0);
    return { model, promptTokens, outputTokens: 0, images: 0, micros: costMicros(model, { promptTokens, completionTokens: 0 }) };
  }
  // The Chat API routes automatically; every other route names its selector.
  const model = estimateModel(catalog, kind === 'message' ? {} : body, 'chat');
  const guarded = !DIRECT.has(route.operationId);
  const tradition = (messages: ChatMessage[]) => (guarded ? withTradition(messages, body.tradition as Tradition | undefined) : messages);
  const grounding = GROUNDED.has(route.operationId) ? groundingTokens(body) : 0;
  let prompt: number;
  let maxTokens: number | undefined;
  let images = 0;
  if (kind === 'message') {
    const limit = numberOr(body.character_limit);
    const query = typeof body.query === 'string' ? body.query : '';
    const messages: ChatMessage[] = [
      ...(limit ? [{ role: 'system' as const, content: `Keep the answer under ${limit} characters.` }] : []),
      { role: 'user', content: query },
    ];
    prompt = promptTokens(tradition(messages));
    // As the Chat API asks (chat-service.ts): about 3 characters per token.
    maxTokens = limit ? Math.ceil(limit / 3) : undefined;
  } else if (kind === 'chat') {
    prompt = promptTokens(tradition((body.messages as ChatMessage[] | undefined) ?? []), body.tools, body.response_format);
    maxTokens = numberOr(body.max_tokens) ?? numberOr(body.max_completion_tokens);
  } else {
    const r = body as unknown as ResponseBody;
    const instructions: ChatMessage[] = typeof r.instructions === 'string' ? [{ role: 'system', content: r.instructions }] : [];
    const messages = tradition([...instructions, ...toMessages(inputItems(r.input))]);
    const { request, imageTool } = providerRequest(r, messages);
    prompt = promptTokens(messages, request.tools, request.responseFormat);
    maxTokens = numberOr(r.max_output_tokens);
    // The model asks for images by tool calls; one each is what a request usually draws.
    images = imageTool ? 1 : 0;
  }
  const total = prompt + grounding + historyTokens;
  const outputTokens = estimateOutputTokens(model, maxTokens);
  return { model, promptTokens: total, outputTokens, images, micros: costMicros(model, { promptTokens: total, completionTokens: outputTokens, images }) };
}

/** Messages, tool definitions and a response schema, as the gateway counts them, images at their hold cost. */
function promptTokens(messages: ChatMessage[], tools?: unknown, format?: unknown): number {
  let images = 0;
  for (const m of messages) {
    if (Array.isArray(m.content)) images += m.content.filter((p) => p.type === 'image_url' && p.image_url.detail !== 'low').length;
  }
  const structured = (value: unknown) => (value && typeof value === 'object' ? estimateTokens(JSON.stringify(value)) : 0);
  return estimateMessageTokens(messages) + images * (IMAGE_HOLD_TOKENS - IMAGE_TOKENS) + structured(tools) + structured(format);
}

/** The grounding message with every passage `sources_limit` allows, each at the longest a passage can be. */
function groundingTokens(body: Body): number {
  const limit = numberOr(body.sources_limit) ?? GROUNDING_DEFAULTS.sources_limit;
  const publisher = typeof body.rag_publisher === 'string' ? body.rag_publisher : 'your organization';
  const empty = { item_id: '', title: '', publisher, url: null, snippet: '', certainty: 1 };
  const message = groundingMessage(Array.from({ length: limit }, () => empty), { publisher, cite: true });
  return estimateMessageTokens([message]) + limit * (MAX_PASSAGE_TOKENS + SOURCE_MARKUP_TOKENS);
}

function numberOr(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/** Works out a request's estimate once, for every stage that needs it (rate limits, billing). */
export class Estimator {
  constructor(
    /** The catalog now (the gateway's: a reload changes it). */
    private readonly catalogs: { readonly catalog: Catalog },
    private readonly history: PromptHistory,
  ) {}

  of(res: Response, route: RouteDefinition, body: unknown, organizationId: string): Promise<RequestEstimate> {
    const locals = res.locals as { estimate?: Promise<RequestEstimate> };
    return (locals.estimate ??= this.work(route, body && typeof body === 'object' ? (body as Body) : {}, organizationId));
  }

  private async work(route: RouteDefinition, body: Body, organizationId: string): Promise<RequestEstimate> {
    let history = 0;
    if (typeof body.previous_response_id === 'string') history = await this.history.response(organizationId, body.previous_response_id);
    else if (route.operationId === 'sendChatMessage' && typeof body.chat_id === 'string') history = await this.history.chat(organizationId, body.chat_id);
    return estimateRequest(this.catalogs.catalog, route, body, history);
  }
}
