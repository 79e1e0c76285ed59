// The pre-resolved route table matches as the Express router did: exact paths, one optional
// trailing slash, case-sensitive, decoded parameters (a malformed escape is a 400), HEAD
// served by GET, routes tried in the order added, 405 naming the methods of a known path.
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { describe, expect, it } from 'vitest';
import { RouteTable } from '../../server/http/route-table.js';

/** Runs the table on a request; returns which step answered (or the error / 'next'), and the params it saw. */
function run(handler: RequestHandler, method: string, path: string): { outcome: unknown; params?: unknown } {
  const req = { method, path } as Request;
  let outcome: unknown = 'unanswered';
  const next: NextFunction = (error?: unknown) => {
    outcome = error === undefined ? 'next' : error;
  };
  try {
    handler(req, { locals: { answer: (name: string) => (outcome = name) } } as unknown as Response, next);
  } catch (thrown) {
    outcome = thrown;
  }
  return { outcome, params: req.params };
}

const answer =
  (name: string): RequestHandler =>
  (_req, res) =>
    res.locals.answer(name);

function table(): RequestHandler {
  const routes = new RouteTable();
  routes.add('GET', '/engine/v2/items', [answer('list')]);
  routes.add('POST', '/engine/v2/items', [(_req, _res, next) => next(), answer('create')]);
  routes.add('GET', '/engine/v2/items/:item_id', [answer('get')]);
  routes.add('GET', '/ai/v2/:product/chat', [answer('product chat')]);
  // Added after a pattern that also matches it: the pattern, tried first, answers.
  routes.add('GET', '/ai/v2/coding/chat', [answer('coding chat')]);
  routes.add('POST', '/fails', [
    async () => {
      throw new Error('step rejected');
    },
  ]);
  return routes.handler((methods) => () => {
    throw new Error(`405 ${methods.join(', ')}`);
  });
}

describe('RouteTable', () => {
  const handler = table();

  it('finds exact paths by method, with one optional trailing slash, case-sensitively', () => {
    expect(run(handler, 'GET', '/engine/v2/items').outcome).toBe('list');
    expect(run(handler, 'GET', '/engine/v2/items/').outcome).toBe('list');
    expect(run(handler, 'POST', '/engine/v2/items').outcome).toBe('create');
    expect(run(handler, 'GET', '/Engine/v2/items').outcome).toBe('next');
    expect(run(handler, 'GET', '/engine/v2/items//').outcome).toBe('next');
  });

  it('decodes parameters, and refuses a malformed escape with a 400', () => {
    expect(run(handler, 'GET', '/engine/v2/items/a%20b')).toEqual({ outcome: 'get', params: { item_id: 'a b' } });
    const { outcome } = run(handler, 'GET', '/engine/v2/items/%E0%A4%A');
    expect(outcome).toMatchObject({ status: 400, message: "Failed to decode param '%E0%A4%A'" });
  });

  it('serves HEAD with GET, and answers another method on a known path with the refusal naming its methods', () => {
    expect(run(handler, 'HEAD', '/engine/v2/items').outcome).toBe('list');
    expect((run(handler, 'DELETE', '/engine/v2/items').outcome as Error).message).toBe('405 GET, POST');
    expect((run(handler, 'OPTIONS', '/engine/v2/items/7').outcome as Error).message).toBe('405 GET');
  });

  it('tries routes in the order added, as Express did', () => {
    expect(run(handler, 'GET', '/ai/v2/coding/chat')).toEqual({ outcome: 'product chat', params: { product: 'coding' } });
  });

  it('passes a rejected step on as an error', async () => {
    const req = { method: 'POST', path: '/fails' } as Request;
    const error = await new Promise((resolve) => handler(req, {} as Response, resolve));
    expect(error).toMatchObject({ message: 'step rejected' });
  });
});
