// Organizations and their publishers, and the ownership rule every data operation applies.
import { Prisma, type Organization, type PrismaClient, type Publisher } from '../../generated/prisma/client.js';
import { ApiError } from '../errors.js';
import { keysetQuery, toPage, type Page, type PageRequest } from '../storage/pagination.js';
import type { Principal } from './principal.js';

/** Where a caller finds its publishers: said by every error about a publisher it named. */
export const PUBLISHERS_HINT = 'list publishers: GET /api/v1/publishers on the management port (MGMT_PORT, 8081 by default), or the console at /console there';

/** A publisher with how many of its (live) items are in each ingestion state. */
export type PublisherView = Publisher & { itemsByStatus: Record<string, number> };

export class OrganizationService {
  constructor(private readonly prisma: PrismaClient) {}

  createOrganization(name: string): Promise<Organization> {
    return this.prisma.organization.create({ data: { name } });
  }

  async createPublisher(organizationName: string, name: string): Promise<Publisher> {
    const organization = await this.findOrganization(organizationName);
    return this.prisma.publisher.create({ data: { name, organizationId: organization.id } });
  }

  async organization(id: string): Promise<Organization> {
    const organization = await this.prisma.organization.findUnique({ where: { id } });
    if (!organization) throw new ApiError('NOT_FOUND', `No organization ${id}`);
    return organization;
  }

  async ownsPublisher(organizationId: string, publisherId: string): Promise<boolean> {
    return (await this.prisma.publisher.count({ where: { id: publisherId, organizationId } })) > 0;
  }

  /** The organization's publishers, newest first, each with its items counted per state. */
  async listPublishers(organizationId: string, page: PageRequest): Promise<Page<PublisherView>> {
    const rows = await this.prisma.publisher.findMany({ ...keysetQuery(page), where: { organizationId, ...keysetQuery(page).where } });
    const found = toPage(rows, page.limit);
    const counts = await this.prisma.item.groupBy({
      by: ['publisherId', 'status'],
      where: { publisherId: { in: found.items.map((p) => p.id) }, deletedAt: null },
      _count: { _all: true },
    });
    const byPublisher = new Map<string, Record<string, number>>();
    for (const c of counts) {
      const statuses = byPublisher.get(c.publisherId) ?? {};
      statuses[c.status] = c._count._all;
      byPublisher.set(c.publisherId, statuses);
    }
    return { ...found, items: found.items.map((p) => ({ ...p, itemsByStatus: byPublisher.get(p.id) ?? {} })) };
  }

  /** A new publisher of the organization; names are unique on the platform (a 409 when taken). */
  async addPublisher(organizationId: string, name: string): Promise<PublisherView> {
    try {
      const publisher = await this.prisma.publisher.create({ data: { name, organizationId } });
      return { ...publisher, itemsByStatus: {} };
    } catch (error) {
      if (error instanceof Prisma.PrismaClientKnownRequestError && error.code === 'P2002') {
        throw new ApiError('CONFLICT', `A publisher named "${name}" exists already: choose another name (${PUBLISHERS_HINT})`);
      }
      throw error;
    }
  }

  async findOrganization(name: string): Promise<Organization> {
    const organization = await this.prisma.organization.findUnique({ where: { name } });
    if (!organization) throw new ApiError('NOT_FOUND', `No organization named "${name}"`);
    return organization;
  }

  /**
   * The publisher, when the caller's organization owns it. Spec 5.6: a publisher outside
   * the caller's organization is a 403; one that does not exist is a 400 (spec 7.3).
   */
  async publisherForCaller(principal: Principal, publisherId: string): Promise<Publisher> {
    const publisher = await this.prisma.publisher.findUnique({ where: { id: publisherId } });
    if (!publisher) throw new ApiError('PUBLISHER_NOT_FOUND', `Publisher ${publisherId} not found (${PUBLISHERS_HINT})`);
    if (publisher.organizationId !== principal.organizationId) {
      throw new ApiError('FORBIDDEN', `Publisher ${publisherId} is not in your organization (${PUBLISHERS_HINT})`);
    }
    return publisher;
  }
}
