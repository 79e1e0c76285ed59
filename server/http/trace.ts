import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';

/** Every response carries its trace id; support finds the request's log lines by it. */
export const TRACE_HEADER = 'X-Trace-Id';

export function newTraceId(): string {
  return `trc_${randomUUID().replace(/-/g, '')}`;
}

export function traceIdOf(res: { locals: Record<string, unknown> }): string {
  return res.locals.traceId as string;
}

export const assignTraceId: RequestHandler = (_req, res, next) => {
  const traceId = newTraceId();
  res.locals.traceId = traceId;
  res.setHeader(TRACE_HEADER, traceId);
  res.setHeader('X-Request-Id', traceId);
  next();
};
