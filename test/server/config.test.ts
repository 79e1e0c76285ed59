import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../server/config.js';

describe('loadConfig', () => {
  it('starts on the embedded defaults with an empty environment', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ port: 8080, mgmtPort: 8081, databaseUrl: undefined, redisUrl: undefined, jsonBodyLimit: 10 * 1024 ** 2 });
  });

  it('reads sizes, booleans and URLs', () => {
    const config = loadConfig({ JSON_BODY_LIMIT: '512kb', VALIDATE_RESPONSES: '1', DATABASE_URL: 'postgres://u@h/db', REDIS_URL: 'redis://h:6379' });
    expect(config).toMatchObject({ jsonBodyLimit: 512 * 1024, validateResponses: true, databaseUrl: 'postgres://u@h/db', redisUrl: 'redis://h:6379' });
  });

  it('treats empty variables as unset', () => {
    expect(loadConfig({ DATABASE_URL: '', PORT: '' }).port).toBe(8080);
  });

  it('reports every bad value by name in one error', () => {
    let error: unknown;
    try {
      loadConfig({ PORT: 'eighty', MGMT_PORT: '70000', DATABASE_URL: 'mysql://x', LOG_LEVEL: 'loud', JSON_BODY_LIMIT: 'big' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems.join('\n');
    for (const name of ['PORT="eighty"', 'MGMT_PORT="70000"', 'DATABASE_URL="mysql://x"', 'LOG_LEVEL="loud"', 'JSON_BODY_LIMIT="big"']) {
      expect(problems).toContain(name);
    }
    expect(problems).toContain('expected a postgres:// or postgresql:// URL');
    expect(problems).toContain('expected a size like 512kb or 10mb');
  });

  it('never echoes a password from a bad URL', () => {
    expect(() => loadConfig({ DATABASE_URL: 'mysql://admin:S3cretPass@db/x' })).toThrow(/admin:\*\*\*@db/);
    expect(() => loadConfig({ DATABASE_URL: 'mysql://admin:S3cretPass@db/x' })).not.toThrow(/S3cretPass/);
  });
});
