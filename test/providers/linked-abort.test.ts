import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { LinkedAbortController } from '../../server/providers/linked-abort.js';

describe('LinkedAbortController', () => {
  it('aborts with the parent, carrying its reason, and on its own without touching the parent', () => {
    const parent = new AbortController();
    const child = new LinkedAbortController(parent.signal);
    const own = new LinkedAbortController(parent.signal);
    own.abort();
    expect(parent.signal.aborted).toBe(false);
    const reason = new Error('client left');
    parent.abort(reason);
    expect(child.signal.aborted).toBe(true);
    expect(child.signal.reason).toBe(reason);
  });

  it('starts aborted under an aborted parent', () => {
    const reason = new Error('gone');
    expect(new LinkedAbortController(AbortSignal.abort(reason)).signal.reason).toBe(reason);
  });

  it('stops following the parent once unlinked', () => {
    const parent = new AbortController();
    const child = new LinkedAbortController(parent.signal);
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(1);
    child.unlink();
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(0);
    parent.abort();
    expect(child.signal.aborted).toBe(false);
  });
});
