// What the pipeline's steps do once a response is over (sent whole, failed, or left by its
// client). Each `res.once('close')` costs a wrapper and a listener-array copy per request;
// the four or five steps that need the end (metrics, the request line, the handler's abort,
// billing, idempotency) share one listener instead.
import type { ServerResponse } from 'node:http';

type Hook = () => void;

const HOOKS = Symbol('response end hooks');

type WithHooks = ServerResponse & { [HOOKS]?: Hook[] };

/** Runs `hook` when the response closes, after the hooks registered before it. */
export function onResponseEnd(res: ServerResponse, hook: Hook): void {
  const target = res as WithHooks;
  const hooks = target[HOOKS];
  if (hooks) {
    hooks.push(hook);
    return;
  }
  const list = [hook];
  target[HOOKS] = list;
  res.once('close', () => {
    for (const run of list) run();
  });
}
