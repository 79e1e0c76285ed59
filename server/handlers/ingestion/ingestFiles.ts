// Scaffolded by `npm run generate`: replace the stub with the implementation.
import type { AppHandler } from '../../http/handler.js';
import { notImplemented } from '../../http/not-implemented.js';

export const ingestFiles = notImplemented('ingestFiles') satisfies AppHandler<'ingestFiles'>;
