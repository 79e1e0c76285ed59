// POST alias of patchItem (the public samples send the single-item update with POST).
import type { AppHandler } from '../../http/handler.js';
import { patchItem } from './patchItem.js';

export const postItem = (async (request, ctx) => patchItem(request, ctx)) satisfies AppHandler<'postItem'>;
