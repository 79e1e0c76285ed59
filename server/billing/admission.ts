// The billing admission stage of inference operations (tags completions, embeddings,
// responses, and the deprecated aliases of those): a prepaid organization's request
// reserves its estimate (prompt + max tokens at the model's price) before the handler, or
// is refused (402 INSUFFICIENT_CREDIT, 429 SPENDING_LIMIT_EXCEEDED, 402 NO_PLAN /
// GC_ALLOWANCE_EXHAUSTED on the coding route). Every inference request, prepaid or not,
// runs in a usage scope the gateway reports into, and is settled when the response closes:
// answered, failed, cut, or left by its client.
import type { RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import { routesById, type RouteDefinition } from '../../generated/contract/routes.js';
import type { Catalog, ModelConfig } from '../gateway/catalog.js';
import { withTradition, type Tradition } from '../gateway/tradition.js';
import type { AdmissionStage } from '../http/router.js';
import { traceIdOf } from '../http/trace.js';
import type { Principal } from '../identity/principal.js';
import { estimateMessageTokens, estimateTokens } from '../providers/local/tokens.js';
import type { ChatMessage } from '../providers/types.js';
import type { BillingService, Reservation } from './billing-service.js';
import { costMicros, estimateModel, estimateOutputTokens } from './pricing.js';
import { runInUsageScope, UsageScope } from '../gateway/usage-scope.js';

const INFERENCE_TAGS = new Set(['completions', 'embeddings', 'responses']);

/** How long a closed response waits for its streams to report what they produced. */
const SETTLE_WAIT_MS = 30_000;

export interface RequestEstimate {
  model: ModelConfig | undefined;
  promptTokens: number;
  outputTokens: number;
  micros: bigint;
}

function inferenceTag(route: RouteDefinition): string {
  return route.replacedBy ? routesById[route.replacedBy].tag : route.tag;
}

/** Whether the operation is a model call that is metered (POSTs of the inference tags). */
export function isInferenceOperation(route: RouteDefinition): boolean {
  return route.method === 'post' && INFERENCE_TAGS.has(inferenceTag(route));
}

/**
 * What a request may cost at most, before routing: the priced model (see `estimateModel`),
 * the prompt estimate of server/providers/local/tokens.ts, and `max_tokens` (or the model's
 * output limit capped at 4,096 when the request sets none).
 */
export function estimateRequest(catalog: Catalog, route: RouteDefinition, body: Record<string, unknown>): RequestEstimate {
  if (inferenceTag(route) === 'embeddings') {
    const model = estimateModel(catalog, body, 'embedding');
    const input = typeof body.input === 'string' ? [body.input] : Array.isArray(body.input) ? body.input : [];
    const promptTokens = input.reduce<number>((sum, text) => sum + (typeof text === 'string' ? estimateTokens(text) : 0), 0);
    return { model, promptTokens, outputTokens: 0, micros: costMicros(model, { promptTokens, completionTokens: 0 }) };
  }
  const model = estimateModel(catalog, body, 'chat');
  let promptTokens: number;
  let maxTokens: number | undefined;
  if (Array.isArray(body.messages)) {
    // Guarded routes (all but v1) send a tradition instruction first: it is prompt too.
    const messages = body.messages as ChatMessage[];
    const sent = route.operationId === 'createChatCompletionV1' ? messages : withTradition(messages, body.tradition as Tradition | undefined);
    promptTokens = estimateMessageTokens(sent);
    maxTokens = numberOr(body.max_tokens) ?? numberOr(body.max_completion_tokens);
  } else {
    // Responses API: a string, or input items (their text is estimated as JSON, erring high).
    const input = typeof body.input === 'string' ? body.input : JSON.stringify(body.input ?? '');
    promptTokens = estimateTokens(input) + estimateTokens(typeof body.instructions === 'string' ? body.instructions : '') + 8;
    maxTokens = numberOr(body.max_output_tokens);
  }
  const outputTokens = estimateOutputTokens(model, maxTokens);
  return { model, promptTokens, outputTokens, micros: costMicros(model, { promptTokens, completionTokens: outputTokens }) };
}

/** The request's estimate, worked out once for the stages that need it (rate limits, billing). */
export function estimateOnce(res: Response, catalog: Catalog, route: RouteDefinition, body: unknown): RequestEstimate {
  const locals = res.locals as { estimate?: RequestEstimate };
  return (locals.estimate ??= estimateRequest(catalog, route, bodyOf(body)));
}

function numberOr(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

export function billingStage(billing: BillingService, catalog: Catalog, logger: Logger): AdmissionStage {
  return (route) => {
    if (!isInferenceOperation(route)) return (_req, _res, next) => next();
    // Every metered operation declares 402 (the Chat API's message included; a test holds
    // it); the coding route draws on its product's plan, never on API credit.
    const gated = '402' in route.errorBodies;
    const coding = route.operationId === 'createCodingChatCompletion';
    const handler: RequestHandler = async (req, res, next) => {
      const principal = res.locals.principal as Principal | undefined;
      if (!principal) return next();
      const organizationId = principal.organizationId;
      const apiKeyId = principal.kind === 'api_key' ? principal.credentialId : null;
      const traceId = traceIdOf(res);
      const product = coding ? String(req.params.coding_product) : null;
      const settings = await billing.settings(organizationId);
      const charge = gated && settings.mode === 'prepaid';
      let reservation: Reservation | null = null;
      if (charge) {
        const estimate = estimateOnce(res, catalog, route, req.body);
        reservation = await billing.reserve({
          organizationId,
          apiKeyId,
          operation: route.operationId,
          model: estimate.model?.id ?? 'unknown',
          product,
          estimateMicros: estimate.micros,
          traceId,
        });
      }
      const scope = new UsageScope();
      res.once('close', () => {
        billing.background(
          scope
            .settled(SETTLE_WAIT_MS)
            .then((calls) => billing.settle({ organizationId, apiKeyId, operation: route.operationId, traceId, product, charge, reservation, calls }))
            .catch((error) => logger.error({ err: error, traceId, reservation: reservation?.id }, 'could not settle the usage of a request')),
        );
      });
      runInUsageScope(scope, () => next());
    };
    return handler;
  };
}

function bodyOf(body: unknown): Record<string, unknown> {
  return body && typeof body === 'object' ? (body as Record<string, unknown>) : {};
}
