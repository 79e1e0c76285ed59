import type { PublisherView } from '../../identity/organizations.js';

/** A publisher as the contract's `Publisher`. */
export const publisherView = (p: PublisherView) => ({ id: p.id, name: p.name, createdAt: p.createdAt.getTime(), itemsByStatus: p.itemsByStatus });
