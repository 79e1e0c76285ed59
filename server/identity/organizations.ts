// Organizations and their publishers, and the ownership rule every data operation applies.
import type { Organization, PrismaClient, Publisher } from '../../generated/prisma/client.js';
import { ApiError } from '../errors.js';
import type { Principal } from './principal.js';

export class OrganizationService {
  constructor(private readonly prisma: PrismaClient) {}

  createOrganization(name: string): Promise<Organization> {
    return this.prisma.organization.create({ data: { name } });
  }

  async createPublisher(organizationName: string, name: string): Promise<Publisher> {
    const organization = await this.findOrganization(organizationName);
    return this.prisma.publisher.create({ data: { name, organizationId: organization.id } });
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
    if (!publisher) throw new ApiError('PUBLISHER_NOT_FOUND', `Publisher ${publisherId} not found`);
    if (publisher.organizationId !== principal.organizationId) {
      throw new ApiError('FORBIDDEN', `Publisher ${publisherId} is not in your organization`);
    }
    return publisher;
  }
}
