// The Responses API over the gateway: one translation layer for v2 (guarded: guardrails,
// output moderation, `tradition`, routing selectors), v1 (direct model access) and grounded
// responses. Input items (and a stored conversation named by previous_response_id) become
// chat messages; the gateway routes, fails over, resumes and meters as for chat
// completions; the answer comes back as typed output items, or as named stream events.
import type { Sources } from '../data/grounding/sources.js';
import { ApiError } from '../errors.js';
import type { GatewayService, Served } from '../gateway/gateway-service.js';
import { chatCall, type CompletionContext } from '../gateway/chat-completions.js';
import { routeHeader } from '../gateway/route-header.js';
import type { Guardrails } from '../gateway/guardrails.js';
import type { Principal } from '../identity/principal.js';
import { planRoute, requestFeatures, tracedRoute, type RoutePlan } from '../gateway/routing.js';
import { traced } from '../observability/tracing.js';
import { withTradition } from '../gateway/tradition.js';
import { estimateMessageTokens } from '../providers/local/tokens.js';
import type { ChatMessage, ToolCall } from '../providers/types.js';
import { type Grounding, groundResponse } from './grounded.js';
import { drawImages } from './images.js';
import { inputItems, toMessages } from './input.js';
import { functionCallItem, incompleteReason, messageItem, newId, reasoningItem, responseObject, usageOf, type ResponseFrame } from './output.js';
import { IMAGE_FUNCTION, providerRequest, type ProviderRequest } from './request.js';
import type { ResponseStore } from './store.js';
import { responseEvents } from './stream.js';
import type { AIErrorObject, GroundedResponseBody, GroundedResponseObject, GroundedStreamEvent, InputItem, OutputItem, ResponseBody, ResponseObject, StreamEvent } from './types.js';

export interface ResponseContext extends CompletionContext {
  organizationId: string;
  /** The enriched error object of a failure after the stream started (rendered by the HTTP layer). */
  describeError(error: unknown): AIErrorObject;
}

/** `headers`: the route the answer took (route-header.ts). */
export type ResponseAnswer = { kind: 'json'; body: ResponseObject; headers: Record<string, string> } | { kind: 'stream'; stream: AsyncIterable<StreamEvent>; headers: Record<string, string> };
export type GroundedAnswer = { kind: 'json'; body: GroundedResponseObject; headers: Record<string, string> } | { kind: 'stream'; stream: AsyncIterable<GroundedStreamEvent>; headers: Record<string, string> };

type Routed = ProviderRequest & { plan: RoutePlan };

/** A request past every check before the model call: its items (stored with the answer) and route. */
type Admitted = Routed & { items: InputItem[]; conversation: ChatMessage[] };

export class ResponsesService {
  constructor(
    private readonly gateway: GatewayService,
    private readonly guardrails: Guardrails,
    private readonly store: ResponseStore,
    private readonly sources: Sources,
  ) {}

  /**
   * A guarded response grounded on a publisher's content; zero sources is an ordinary
   * answer. The answer (JSON, or the stream's terminal event) reports sources_returned and
   * citations; `sourcesReturned` is for the stream's header.
   */
  async createGrounded(principal: Principal, body: GroundedResponseBody, ctx: ResponseContext): Promise<{ answer: GroundedAnswer; sourcesReturned: boolean }> {
    const admitted = await this.admit(body, ctx);
    const grounding = await groundResponse(this.sources, principal, body, ctx);
    // The passages join the request: routed again, as they count toward the context window.
    const routed = this.route(body, ctx, admitted.conversation, grounding);
    // The report joins every terminal response (JSON or event): each is a GroundedResponse.
    const answer = (await this.answer(body, ctx, { ...admitted, ...routed }, grounding)) as GroundedAnswer;
    return { answer, sourcesReturned: grounding.report.sources_returned };
  }

  async create(body: ResponseBody, ctx: ResponseContext): Promise<ResponseAnswer> {
    return this.answer(body, ctx, await this.admit(body, ctx));
  }

  /**
   * What a response refuses before any model call, cheapest first: an unknown
   * previous_response_id, no user message, a request that cannot be routed, then the input
   * guardrails. A request refused anyway spends no moderation call (and, grounded, no retrieval).
   */
  private async admit(body: ResponseBody, ctx: ResponseContext): Promise<Admitted> {
    const history = body.previous_response_id ? await this.history(ctx.organizationId, body.previous_response_id) : [];
    const items = [...history, ...inputItems(body.input)];
    const conversation = toMessages(items);
    this.gateway.catalog.imageUrls.check(conversation, () => 'input');
    if (ctx.mode === 'guarded' && !conversation.some((m) => m.role === 'user')) {
      throw new ApiError('NO_USER_MESSAGE', 'input must contain at least one user message.', { param: 'input' });
    }
    const routed = this.route(body, ctx, conversation);
    if (ctx.mode === 'guarded') await traced(ctx.trace, 'guardrails.input', {}, () => this.guardrails.checkInput(conversation, ctx.signal));
    return { items, conversation, ...routed };
  }

  /** The provider request (instructions, grounding, tradition before the conversation) and its route. */
  private route(body: ResponseBody, ctx: ResponseContext, conversation: ChatMessage[], grounding?: Grounding): Routed {
    const guarded = ctx.mode === 'guarded';
    const system: ChatMessage[] = [
      ...(body.instructions ? [{ role: 'system' as const, content: body.instructions }] : []),
      ...(grounding ? [grounding.message] : []),
    ];
    const messages = guarded ? withTradition([...system, ...conversation], body.tradition) : [...system, ...conversation];
    const { request, imageTool } = providerRequest(body, messages);
    const selector = guarded ? body : { model: body.model };
    const plan = tracedRoute(ctx.trace, selector, () => planRoute(this.gateway.catalog, selector, requestFeatures(request, { imageGeneration: imageTool !== undefined }), ctx.models));
    return { request, imageTool, plan };
  }

  private async answer(body: ResponseBody, ctx: ResponseContext, admitted: Admitted, grounding?: Grounding): Promise<ResponseAnswer> {
    const guarded = ctx.mode === 'guarded';
    const { items, request, imageTool, plan } = admitted;
    if (body.metadata) ctx.log.info({ metadata: body.metadata }, 'response metadata');

    const id = newId('resp');
    const createdAt = Math.floor(Date.now() / 1000);
    const frame = (served: Served): ResponseFrame => ({
      id,
      object: 'response',
      created_at: createdAt,
      model: served.model.id,
      instructions: body.instructions ?? null,
      previous_response_id: body.previous_response_id ?? null,
      metadata: body.metadata ?? {},
      provider: served.provider,
      routing_mechanism: plan.mechanism,
      tradition: guarded ? (body.tradition ?? null) : null,
    });
    const call = chatCall(ctx, plan, request);
    const internal = (name: string) => imageTool !== undefined && name === IMAGE_FUNCTION;
    const annotations = grounding?.annotations ?? (() => []);
    // The answer is made (and billed) whether or not it can be stored: a failed write costs
    // the caller only a later previous_response_id (404), so it is logged, never thrown.
    const finished = async (response: ResponseObject) => {
      if (body.store === false) return;
      try {
        await this.store.save({
          id: response.id,
          organizationId: ctx.organizationId,
          previousResponseId: response.previous_response_id ?? null,
          model: response.model,
          status: response.status,
          input: items,
          output: response.output,
        });
      } catch (error) {
        ctx.log.error({ err: error, responseId: response.id }, 'could not store a response: previous_response_id will not find it');
      }
    };

    if (!body.stream) {
      const { result, served, attempts } = await this.gateway.chat(call);
      let { content, finishReason } = result;
      if (guarded && content && (await this.guardrails.blocksOutput(content, ctx.signal))) {
        content = null;
        finishReason = 'content_filter';
      }
      const incomplete = incompleteReason(finishReason);
      const calls = result.toolCalls ?? [];
      const output: OutputItem[] = [];
      if (content || result.refusal) output.push(messageItem(content, result.refusal, incomplete ? 'incomplete' : 'completed', content ? annotations(content) : []));
      output.push(...calls.filter((c) => !internal(c.function.name)).map((c) => functionCallItem(c, 'completed')));
      if (imageTool && incomplete !== 'content_filter') {
        for await (const run of drawImages(this.gateway, served, imageTool, calls.filter((c) => internal(c.function.name)), ctx)) output.push(await run.done);
      }
      // Last, as a stream can only tell it (from its final usage): the same order either way.
      if (result.usage.reasoningTokens) output.push(reasoningItem());
      const response = responseObject(frame(served), {
        status: incomplete ? 'incomplete' : 'completed',
        output,
        usage: usageOf(result.usage),
        incomplete,
      });
      await finished(response);
      return { kind: 'json', body: { ...response, ...grounding?.report }, headers: routeHeader(attempts) };
    }

    // The commit point: until the first upstream event a failure is still an HTTP error.
    const upstream = await this.gateway.chatStream(call);
    const stream = responseEvents({
      frame: frame(upstream.served),
      upstream,
      moderation: guarded ? this.guardrails.monitor(ctx.signal) : null,
      internal,
      runInternal: (calls: ToolCall[]) => drawImages(this.gateway, upstream.served, imageTool!, calls, ctx),
      annotations,
      report: grounding?.report,
      describeError: (error) => {
        // The stream reports it in-band (error, response.failed); the log keeps the cause.
        ctx.log.error({ err: error }, 'response stream failed after it started');
        return { error: ctx.describeError(error), traceId: ctx.traceId };
      },
      finished,
    });
    return { kind: 'stream', stream, headers: routeHeader(upstream.attempts) };
  }

  /** Tokens of the stored conversation `previousId` names, as the model would be sent it (0 when not found). */
  async historyTokens(organizationId: string, previousId: string): Promise<number> {
    const stored = await this.store.conversation(organizationId, previousId);
    return stored ? estimateMessageTokens(toMessages(stored.items)) : 0;
  }

  /** The stored conversation a follow-up continues (404 when it is not the caller's, or expired). */
  private async history(organizationId: string, previousId: string): Promise<InputItem[]> {
    const stored = await this.store.conversation(organizationId, previousId);
    if (!stored) throw new ApiError('NOT_FOUND', `No stored response ${previousId} in this organization.`, { param: 'previous_response_id' });
    return stored.items;
  }
}
