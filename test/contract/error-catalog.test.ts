// The error catalog names only errors the server can send: a code that nothing raises any
// more (PROVIDER_SERVER_ERROR once upstream 5xx became PROVIDER_INFERENCE_ERROR) misleads
// every client that branches on it, and the SDK exports a class for it.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { errorCatalog } from '../../generated/contract/errors.js';

/** Catalog codes the server does not raise yet, each with why it stays. */
const NOT_RAISED_YET: Record<string, string> = {
  ROUTING_ERROR: 'spec 6 lists a routing error among in-stream failures; the gateway answers PROVIDER_UNAVAILABLE today',
};

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [readFileSync(path, 'utf8')] : [];
  });
}

describe('error catalog', () => {
  it('has no code the server never raises', () => {
    const server = sources(new URL('../../server', import.meta.url).pathname).join('\n');
    const unraised = Object.keys(errorCatalog).filter((name) => !server.includes(`'${name}'`) && !server.includes(`"${name}"`));
    expect(unraised.filter((name) => !(name in NOT_RAISED_YET))).toEqual([]);
    // An allowance for a code that is raised now is stale.
    expect(Object.keys(NOT_RAISED_YET).filter((name) => !unraised.includes(name))).toEqual([]);
  });
});
