// `npm run mock` listens where the user says (issue 9): MOCK_PORT for the front server,
// MOCK_PRISM_PORT for the inner Prism process, and prints both.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import net, { type AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { startMock } from '../../mocks/serve.js';

const SERVE = fileURLToPath(new URL('../../mocks/serve.ts', import.meta.url));
const TSX = createRequire(import.meta.url).resolve('tsx/cli');

async function freePort(): Promise<number> {
  const probe = net.createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

let child: ChildProcess | undefined;
afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) {
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
});

describe('ports', () => {
  it('listens on MOCK_PORT and MOCK_PRISM_PORT and prints both', async () => {
    const [front, inner] = [await freePort(), await freePort()];
    child = spawn(process.execPath, [TSX, SERVE], {
      env: { ...process.env, MOCK_PORT: String(front), MOCK_PRISM_PORT: String(inner) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const deadline = Date.now() + 45_000;
    while (!output.includes('mgmt_base_url') || !output.includes('Prism')) {
      if (child.exitCode !== null) throw new Error(`mock exited: ${output}`);
      if (Date.now() > deadline) throw new Error(`mock did not start: ${output}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(output).toContain(`http://127.0.0.1:${front}`);
    expect(output).toContain(`http://127.0.0.1:${inner}`);
    const headers = { Authorization: 'Bearer sk_test' };
    const viaFront = await fetch(`http://127.0.0.1:${front}/ai/v1/models`, { headers });
    expect(viaFront.status).toBe(200);
    expect(viaFront.headers.get('x-trace-id')).toMatch(/^trc_[0-9a-f]{32}$/);
    const viaPrism = await fetch(`http://127.0.0.1:${inner}/ai/v1/models`, { headers });
    expect(viaPrism.status).toBe(200);
    child.kill('SIGTERM');
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
  }, 60_000);

  it('says which setting to change when the Prism port is taken', async () => {
    const busy = net.createServer().listen(0, '127.0.0.1');
    await once(busy, 'listening');
    try {
      const { port } = busy.address() as AddressInfo;
      await expect(startMock({ port: 0, prismPort: port })).rejects.toThrow(/MOCK_PRISM_PORT/);
    } finally {
      await new Promise((resolve) => busy.close(resolve));
    }
  });

  it('refuses a MOCK_PRISM_PORT that is not a port number', async () => {
    const saved = process.env.MOCK_PRISM_PORT;
    process.env.MOCK_PRISM_PORT = 'abc';
    try {
      await expect(startMock({ port: 0 })).rejects.toThrow(/MOCK_PRISM_PORT/);
    } finally {
      if (saved === undefined) delete process.env.MOCK_PRISM_PORT;
      else process.env.MOCK_PRISM_PORT = saved;
    }
  });
});
