// The Idempotency-Key admission stage: a repeated POST (same caller, key and request) gets
// the first answer back instead of running twice, which is what makes client retries safe.
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Request, RequestHandler } from 'express';
import { routesById } from '../../../generated/contract/routes.js';
import { ApiError } from '../../errors.js';
import type { Principal } from '../../identity/principal.js';
import type { IdempotencyRecords } from '../../storage/idempotency-store.js';
import type { SpooledFile } from '../multipart.js';
import { onResponseEnd } from '../response-end.js';
import type { AdmissionStage } from '../router.js';

export const REPLAYED_HEADER = 'Idempotent-Replayed';

function requestHash(req: Request): string {
  const hash = createHash('sha256').update(`${req.method} ${req.originalUrl}\n`).update(JSON.stringify(req.body ?? null));
  // File parts were hashed while they streamed to disk (multipart.ts).
  for (const file of (req.files as (Express.Multer.File & SpooledFile)[] | undefined) ?? []) {
    hash.update(`\n${file.fieldname}:${file.originalname}:${file.sha256}`);
  }
  return hash.digest('hex');
}

/** Inference answers have no durable effect: their keys live in a cache, not the database. */
const INFERENCE_TAGS = new Set(['completions', 'embeddings', 'responses']);

export interface IdempotencyStores {
  durable: IdempotencyRecords;
  inference: IdempotencyRecords;
}

export function idempotencyStage(stores: IdempotencyStores, options: { waitMs: number; pollMs: number }): AdmissionStage {
  return (route) => {
    if (!route.idempotent) return (_req, _res, next) => next();
    // A deprecated alias of an inference operation is inference too.
    const tag = route.replacedBy ? routesById[route.replacedBy].tag : route.tag;
    const store = INFERENCE_TAGS.has(tag) ? stores.inference : stores.durable;
    const handler: RequestHandler = async (req, res, next) => {
      const key = req.header('idempotency-key');
      const principal = res.locals.principal as Principal | undefined;
      // Without a caller there is no one to scope the key to.
      if (!key || !principal) return next();
      const stream = (req.body as { stream?: unknown } | undefined)?.stream === true;

      const claimRequest = { organizationId: principal.organizationId, key, operationId: route.operationId, requestHash: requestHash(req) };
      const deadline = Date.now() + options.waitMs;
      let claim = await store.claim(claimRequest);
      // Waiting reads the record; it only tries to claim again once the key is free. A stream
      // cannot be replayed, so a duplicate of one in flight is refused at once (never run twice).
      while (claim.kind === 'in_progress' && !stream && Date.now() < deadline) {
        await sleep(options.pollMs);
        claim = (await store.inspect(claimRequest)) ?? (await store.claim(claimRequest));
      }
      switch (claim.kind) {
        case 'mismatch':
          throw new ApiError('INVALID_REQUEST', 'This Idempotency-Key was already used for a different request', {
            status: 400,
            gatewayCode: 'idempotency_key_reused',
          });
        case 'in_progress':
          throw new ApiError('IDEMPOTENCY_KEY_IN_USE', 'A request with this Idempotency-Key is still running');
        case 'replay':
          res.setHeader(REPLAYED_HEADER, 'true');
          res.status(claim.status).json(claim.body);
          return;
        case 'new':
          if (stream) holdWhileStreaming(res, claim.recordId, store, req);
          else remember(res, claim.recordId, store, req);
          next();
      }
    };
    return handler;
  };
}

/**
 * Answers a retry could change, never kept: entitlement (402: credit may land), timeouts
 * (408), conflicts (409), quotas and the weekly cap (429), and failures (5xx).
 */
const TRANSIENT = new Set([402, 408, 409, 429]);

function keeps(status: number): boolean {
  return status < 500 && !TRANSIENT.has(status);
}

/**
 * Keeps the JSON answer actually sent; a transient answer, a stream or a cut connection is
 * forgotten. `res.json` goes on through whatever wrapped it earlier (the contract's response
 * validation), and the text it hands `res.send` is kept too, so that a store keeping text
 * stores those bytes instead of serializing the answer again.
 */
function remember(res: Parameters<RequestHandler>[1], recordId: string, store: IdempotencyRecords, req: Request): void {
  let body: unknown;
  let json: string | undefined;
  let serializing = false;
  const sendJson = res.json.bind(res);
  const send = res.send.bind(res);
  res.json = (value: unknown) => {
    body = value;
    serializing = true;
    try {
      return sendJson(value);
    } finally {
      serializing = false;
    }
  };
  res.send = (chunk?: unknown) => {
    if (serializing && typeof chunk === 'string') json = chunk;
    return send(chunk);
  };
  onResponseEnd(res, () => {
    const keep = res.writableFinished && json !== undefined && keeps(res.statusCode);
    const bytes = Number(res.getHeader('content-length') ?? 0);
    const settle = keep ? store.complete(recordId, { status: res.statusCode, body, json: json!, bytes }) : store.release(recordId);
    settle.catch((error) => req.log.error({ err: error }, 'could not settle an idempotency record'));
  });
}

/**
 * A stream holds its key while it runs (a concurrent duplicate is 409 IDEMPOTENCY_KEY_IN_USE,
 * so it is not produced and billed twice) and frees it when it ends: it cannot be replayed,
 * and a client retrying a stream it did not get whole wants it run again.
 */
function holdWhileStreaming(res: Parameters<RequestHandler>[1], recordId: string, store: IdempotencyRecords, req: Request): void {
  onResponseEnd(res, () => {
    store.release(recordId).catch((error) => req.log.error({ err: error }, 'could not release the Idempotency-Key of a stream'));
  });
}
