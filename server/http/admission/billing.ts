// The billing admission stage of inference operations (tags completions, embeddings,
// responses, and the deprecated aliases of those): a prepaid organization's request
// reserves its estimate (estimate.ts: its worst case at the model's price) before the handler, or
// is refused (402 INSUFFICIENT_CREDIT, 429 SPENDING_LIMIT_EXCEEDED, of the organization or
// of a key with its own limits, 402 NO_PLAN /
// GC_ALLOWANCE_EXHAUSTED on the coding route). Every inference request, prepaid or not,
// gets a usage scope (`res.locals.meter`, the handler's `ctx.meter`) that its gateway calls
// report into, and is settled when the response closes:
// answered, failed, cut, or left by its client. Search operations run in one too: their
// query embeddings are recorded (never gated).
import type { RequestHandler } from 'express';
import type { Logger } from 'pino';
import { routesById, type RouteDefinition } from '../../../generated/contract/routes.js';
import type { AdmissionStage } from '../router.js';
import { onResponseEnd } from '../response-end.js';
import { traceIdOf } from '../trace.js';
import type { Principal } from '../../identity/principal.js';
import type { BillingService } from '../../billing/billing-service.js';
import type { Reservation, Settlement } from '../../billing/reservations.js';
import type { Estimator } from '../../billing/estimate.js';
import { UsageScope } from '../../gateway/usage-scope.js';
import { traced, type RequestTrace } from '../../observability/tracing.js';

const INFERENCE_TAGS = new Set(['completions', 'embeddings', 'responses']);

/** How long a closed response waits for its streams to report what they produced. */
const SETTLE_WAIT_MS = 30_000;

function inferenceTag(route: RouteDefinition): string {
  return route.replacedBy ? routesById[route.replacedBy].tag : route.tag;
}

/** Whether the operation is a model call that is metered and gated (POSTs of the inference tags). */
export function isInferenceOperation(route: RouteDefinition): boolean {
  return route.method === 'post' && INFERENCE_TAGS.has(inferenceTag(route));
}

/**
 * Whether the operation's model calls are metered: inference, and search (its query is
 * embedded by an embedding model), which is recorded but never gated (it declares no 402).
 */
export function isMeteredOperation(route: RouteDefinition): boolean {
  return isInferenceOperation(route) || (route.method === 'post' && inferenceTag(route) === 'search');
}

export function billingStage(billing: BillingService, estimator: Estimator, logger: Logger): AdmissionStage {
  return (route) => {
    if (!isMeteredOperation(route)) return (_req, _res, next) => next();
    // Every metered operation declares 402 (the Chat API's message included; a test holds
    // it); the coding route draws on its product's plan, never on API credit.
    const gated = isInferenceOperation(route) && '402' in route.errorBodies;
    const coding = route.operationId === 'createCodingChatCompletion';
    const handler: RequestHandler = async (req, res, next) => {
      const principal = res.locals.principal as Principal | undefined;
      if (!principal) return next();
      const organizationId = principal.organizationId;
      const apiKeyId = principal.kind === 'api_key' ? principal.credentialId : null;
      const traceId = traceIdOf(res);
      const product = coding ? String(req.params.coding_product) : null;
      const settings = await billing.accounts.settings(organizationId);
      const prepaid = settings.mode === 'prepaid';
      const charge = gated && prepaid;
      // A weekly cap binds whenever it is set (spec 7.3.1, part 8): an unmetered
      // organization's requests hold against the cap alone (the coding route never counts).
      // So does a key's own cap (its credit share only binds where the balance pays).
      const limitedKey = gated && !coding && principal.spendLimited === true;
      const capped = gated && !coding && (settings.weeklyCapMicros !== null || limitedKey);
      let reservation: Reservation | null = null;
      if (charge || capped) {
        const estimate = await estimator.of(res, route, req.body, organizationId);
        const trace = res.locals.trace as RequestTrace | undefined;
        const hold = { 'gen_ai.request.model': estimate.model?.id, 'billing.estimate_micros': Number(estimate.micros), 'billing.limited_key': limitedKey };
        reservation = await traced(trace, 'billing.reserve', hold, () => billing.reservations.reserve({
          organizationId,
          apiKeyId,
          operation: route.operationId,
          model: estimate.model?.id ?? 'unknown',
          product,
          estimateMicros: estimate.micros,
          traceId,
          debit: prepaid,
          limitedKey,
        }));
      }
      const scope = new UsageScope();
      let reportSettlement!: (settlement: Settlement | null) => void;
      // What the request's model calls came to, for whoever reports on it (the request log).
      res.locals.settlement = new Promise<Settlement | null>((resolve) => (reportSettlement = resolve));
      onResponseEnd(res, () => {
        billing.reservations.background(
          scope
            .settled(SETTLE_WAIT_MS)
            .then((calls) =>
              traced(res.locals.trace as RequestTrace | undefined, 'billing.settle', {}, () =>
                billing.reservations.settle({ organizationId, apiKeyId, operation: route.operationId, traceId, product, charge, reservation, calls }),
              ),
            )
            .then(reportSettlement, (error: unknown) => {
              reportSettlement(null);
              logger.error({ err: error, traceId, reservation: reservation?.id }, 'could not settle the usage of a request');
            }),
        );
      });
      res.locals.meter = scope;
      next();
    };
    return handler;
  };
}
