// What every handler receives besides its typed request.
import type { Logger } from 'pino';
import type { RouteDefinition } from '../../generated/contract/routes.js';
import type { Handler, OperationId } from '../../generated/server/operations.js';
import type { UsageMeter } from '../gateway/usage-scope.js';
import type { Principal } from '../identity/principal.js';
import type { RequestTrace } from '../observability/tracing.js';
import type { Services } from '../services.js';

export interface RequestContext {
  traceId: string;
  route: RouteDefinition;
  /** null only on operations whose contract needs no credentials. */
  principal: Principal | null;
  log: Logger;
  /** Aborted when the client goes away: stop upstream work and streams. */
  signal: AbortSignal;
  /** The request's usage meter (billing admission opens it on metered operations): pass it with every gateway call. */
  meter: UsageMeter | null;
  /** The request's trace (tracing.ts); null when tracing is off. */
  trace: RequestTrace | null;
  services: Services;
}

/** Implement an operation with `satisfies AppHandler<'operationId'>`, so drift from openapi.yaml fails the typecheck. */
export type AppHandler<K extends OperationId> = Handler<K, RequestContext>;

/** The caller of an operation that requires credentials (authentication ran before the handler). */
export function callerOf(ctx: RequestContext): Principal {
  if (!ctx.principal) throw new Error(`${ctx.route.operationId} ran without an authenticated caller`);
  return ctx.principal;
}
