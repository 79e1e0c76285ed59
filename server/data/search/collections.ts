// Collections: how the public platform's named indexes (e.g. `GlooProd`) map onto an
// organization's content.
//
// A collection is an organization's named index over the passages of all its publishers.
// Every organization has the default one (SEARCH_COLLECTION, `GlooProd` unless configured),
// created on first use; it is multi-tenant and its tenants are the organization's publisher
// names, so `tenant` narrows a search to one publisher. Further collections are rows of the
// `collections` table (an operator's choice of name and tenancy) over the same passages.
// Collections of other organizations are invisible: their names answer "invalid collection".
//
// The embedding space (model and vector size) is recorded on the default collection the
// first time a passage is indexed and never changes: every passage of the organization is
// embedded in it, and queries are embedded in it too, so vectors are never mixed.
import { ApiError } from '../../errors.js';
import type { PrismaClient } from '../../../generated/prisma/client.js';
import type { EmbeddingSpace } from './chunk-index.js';

export interface CollectionInfo {
  id: string;
  name: string;
  multiTenant: boolean;
}

interface CollectionRow {
  id: string;
  name: string;
  multi_tenant: boolean;
  embedding_model: string | null;
  embedding_dimensions: number | null;
}

export class Collections {
  /** Recorded spaces never change, so they are remembered once read. */
  private readonly spaces = new Map<string, EmbeddingSpace>();
  /** The default collection exists once created, so it is created (or read) once per organization. */
  private readonly defaults = new Map<string, CollectionInfo>();

  constructor(
    private readonly prisma: PrismaClient,
    readonly defaultName: string,
    /** The space a collection gets when it is first filled; null: the catalog has no embedding model. */
    readonly defaultSpace: EmbeddingSpace | null,
  ) {}

  /** The organization's collection of that name, or null (an invalid collection). */
  async find(organizationId: string, name: string): Promise<CollectionInfo | null> {
    if (name === this.defaultName) {
      const known = this.defaults.get(organizationId);
      if (known) return known;
      const row = await this.ensureDefault(organizationId);
      const info = { id: row.id, name: row.name, multiTenant: row.multi_tenant };
      this.defaults.set(organizationId, info);
      return info;
    }
    const row = await this.prisma.collection.findUnique({ where: { organizationId_name: { organizationId, name } } });
    return row && { id: row.id, name: row.name, multiTenant: row.multiTenant };
  }

  /** The space the organization's passages are (or will be) indexed in; records it on first use. */
  async spaceFor(organizationId: string): Promise<EmbeddingSpace> {
    const known = this.spaces.get(organizationId);
    if (known) return known;
    const row = await this.ensureDefault(organizationId);
    if (row.embedding_model === null || row.embedding_dimensions === null) {
      if (!this.defaultSpace) {
        throw new ApiError('SERVICE_UNAVAILABLE', 'The model catalog has no embedding model: content cannot be indexed or searched.');
      }
      // Conditional on "still unset", so concurrent first indexers agree on one space.
      await this.prisma.$executeRaw`
        UPDATE collections SET embedding_model = ${this.defaultSpace.model}, embedding_dimensions = ${this.defaultSpace.dimensions}
         WHERE id = ${row.id}::uuid AND embedding_model IS NULL`;
      return this.spaceFor(organizationId);
    }
    const space = { model: row.embedding_model, dimensions: row.embedding_dimensions };
    this.spaces.set(organizationId, space);
    return space;
  }

  /** The recorded space, or null while the organization has indexed nothing (nothing to search). */
  async recordedSpace(organizationId: string): Promise<EmbeddingSpace | null> {
    const known = this.spaces.get(organizationId);
    if (known) return known;
    const rows = await this.prisma.$queryRaw<CollectionRow[]>`
      SELECT id, name, multi_tenant, embedding_model, embedding_dimensions FROM collections
       WHERE organization_id = ${organizationId}::uuid AND name = ${this.defaultName}`;
    const row = rows[0];
    if (!row || row.embedding_model === null || row.embedding_dimensions === null) return null;
    const space = { model: row.embedding_model, dimensions: row.embedding_dimensions };
    this.spaces.set(organizationId, space);
    return space;
  }

  private async ensureDefault(organizationId: string): Promise<CollectionRow> {
    await this.prisma.$executeRaw`
      INSERT INTO collections (organization_id, name, multi_tenant) VALUES (${organizationId}::uuid, ${this.defaultName}, true)
      ON CONFLICT (organization_id, name) DO NOTHING`;
    const rows = await this.prisma.$queryRaw<CollectionRow[]>`
      SELECT id, name, multi_tenant, embedding_model, embedding_dimensions FROM collections
       WHERE organization_id = ${organizationId}::uuid AND name = ${this.defaultName}`;
    return rows[0]!;
  }
}
