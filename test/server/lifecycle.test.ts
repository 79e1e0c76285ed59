// The platform migrates and boots on the embedded database and on PostgreSQL, keeps its
// data across restarts, and lets in-flight requests finish when it stops.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestPlatform } from '../support/platform.js';
import { describePostgres, useTestDatabase } from '../support/postgres.js';

async function health(platform: Awaited<ReturnType<typeof startTestPlatform>>, key = platform.adminKey) {
  const res = await platform.mgmt('/api/v1/health', { key });
  return { status: res.status, body: await res.json() };
}

describe('on PGlite', () => {
  const dirs: string[] = [];
  afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

  it('persists data across a restart of the same data directory', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'platform-'));
    dirs.push(dataDir);
    const first = await startTestPlatform({ dataDir });
    expect(first.services.database.kind).toBe('pglite');
    expect(first.services.database.capabilities.vector).toBe(true);
    const key = first.adminKey;
    await first.close();

    // The second start finds the organization: no new bootstrap, and the old key still works.
    const again = await startTestPlatform({ dataDir }, {}, { adminKey: key });
    try {
      expect(again.bootstrap).toBeNull();
      const { status, body } = await health(again);
      expect(status).toBe(200);
      expect(body.data.status).toBe('healthy');
    } finally {
      await again.close();
    }
  });

  it('finishes in-flight requests during a graceful shutdown', async () => {
    let arrived!: () => void;
    const inFlight = new Promise<void>((resolve) => (arrived = resolve));
    const platform = await startTestPlatform({}, {
      admission: [
        (route) => async (_req, _res, next) => {
          if (route.operationId === 'getHealth') {
            arrived();
            await new Promise((resolve) => setTimeout(resolve, 300));
          }
          next();
        },
      ],
    });
    const pending = health(platform);
    await inFlight;
    const closed = platform.close();
    const result = await pending;
    await closed;
    expect(result.status).toBe(200);
    await expect(fetch(`${platform.mgmtUrl}/api/v1/health`)).rejects.toThrow();
  });
});

describePostgres('on PostgreSQL', () => {
  const database = useTestDatabase('lifecycle');

  it('migrates, boots and reports which features need pgvector', async () => {
    const platform = await startTestPlatform({ databaseUrl: database.url });
    try {
      expect(platform.services.database.kind).toBe('postgres');
      const { status, body } = await health(platform);
      expect(status).toBe(200);
      expect(body.data.gateways.map((g: { id: string }) => g.id)).toContain('database');
      if (!platform.services.database.capabilities.vector) {
        expect(platform.logs.join('\n')).toMatch(/pgvector/);
      }
    } finally {
      await platform.close();
    }
  });
});
