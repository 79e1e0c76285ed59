// Ingestion end to end on the embedded PGlite (the suite: ingestion.suite.ts).
import { describe } from 'vitest';
import { startTestPlatform } from '../support/platform.js';
import { ingestionSuite } from './ingestion.suite.js';

describe('ingestion on PGlite', () => {
  ingestionSuite((overrides) => startTestPlatform({ logLevel: 'warn', ...overrides }));
});
