// Paywall-related (deprecated, "no longer supported"): a teaser of the item `producer_id`
// names, and related articles. The teaser is extractive, made of the item's own sentences
// (its summary when it has one, the sentences most central to its text), so it never
// invents what the paywalled text says and makes no model call. Related articles are the
// items whose passages retrieval finds for the item's title and summary, ranked like
// recommendations: more matching passages first, then cumulative certainty.
import type { components } from '../../../generated/types/openapi.js';
import type { PrismaClient } from '../../../generated/prisma/client.js';
import { ApiError } from '../../errors.js';
import type { CallScope } from '../../gateway/gateway-service.js';
import type { Principal } from '../../identity/principal.js';
import { sentencesOf } from '../../providers/local/extractive-answer.js';
import { contentTerms } from '../../providers/local/terms.js';
import { GROUNDING_DEFAULTS } from '../grounding/grounded-completions.js';
import type { Sources } from '../grounding/sources.js';
import type { Retriever } from '../search/chunk-index.js';

type Schemas = components['schemas'];

const BULLETS = 3;
const RELATED = 5;
/** Passages retrieved to find related items (several can come from one item). */
const RELATED_PASSAGES = 30;
const SUMMARY_CHARS = 300;

export class Paywall {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly sources: Sources,
    private readonly retriever: Retriever,
  ) {}

  async related(principal: Principal, request: Schemas['PaywallRelatedRequest'], scope: CallScope): Promise<Schemas['PaywallRelatedResult']> {
    const producerId = request.request?.producer_id?.trim();
    if (!producerId) throw new ApiError('INVALID_REQUEST', 'request.producer_id is required.');
    const tenant = request.request_body?.tenant;
    const publisherIds = tenant
      ? [(await this.sources.publisherNamed(principal, tenant)).id]
      : (await this.prisma.publisher.findMany({ where: { organizationId: principal.organizationId }, select: { id: true } })).map((p) => p.id);
    const item = await this.prisma.item.findFirst({
      where: { producerId, publisherId: { in: publisherIds }, deletedAt: null },
      include: { chunks: { select: { content: true }, orderBy: { ordinal: 'asc' } } },
    });
    if (!item) throw new ApiError('INVALID_REQUEST', `No item with producer_id "${producerId}"${tenant ? ` in ${tenant}` : ''}.`);

    const sentences = item.chunks.flatMap((chunk) => sentencesOf(chunk.content));
    const central = byCentrality(sentences);
    const summary = item.itemSummary ?? upTo(sentences, SUMMARY_CHARS) ?? item.title ?? '';
    const bullets = central.slice(0, BULLETS).sort((a, b) => sentences.indexOf(a) - sentences.indexOf(b));
    const whyRead = central.find((s) => !summary.includes(s) && !bullets.includes(s)) ?? central[0] ?? summary;

    const query = [item.title, item.itemSummary ?? sentences[0]].filter(Boolean).join('. ');
    const related = query
      ? await this.relatedItems(principal.organizationId, publisherIds, query, item.id, scope)
      : [];
    return { ai_paywall_summary: summary, ai_why_read: whyRead, bullet_points: bullets, related_articles: related };
  }

  private async relatedItems(organizationId: string, publisherIds: string[], query: string, itemId: string, scope: CallScope) {
    const passages = await this.retriever.retrieve(
      { organizationId, publisherIds, query, limit: RELATED_PASSAGES, certainty: GROUNDING_DEFAULTS.certainty, purpose: 'search' },
      scope,
    );
    const byItem = new Map<string, { item_id: string; item_title: string | null; publisher: string; snippet_count: number; cumulative_certainty: number }>();
    for (const p of passages) {
      if (p.itemId === itemId) continue;
      const entry = byItem.get(p.itemId) ?? { item_id: p.itemId, item_title: p.itemTitle, publisher: p.publisherName, snippet_count: 0, cumulative_certainty: 0 };
      entry.snippet_count += 1;
      entry.cumulative_certainty += p.certainty;
      byItem.set(p.itemId, entry);
    }
    const ranked = [...byItem.values()]
      .sort((a, b) => b.snippet_count - a.snippet_count || b.cumulative_certainty - a.cumulative_certainty)
      .slice(0, RELATED);
    const urls = new Map(
      (await this.prisma.item.findMany({ where: { id: { in: ranked.map((r) => r.item_id) } }, select: { id: true, itemUrl: true, hostedUrl: true } })).map(
        (i) => [i.id, i.itemUrl ?? i.hostedUrl ?? null],
      ),
    );
    return ranked.map((r) => ({ ...r, item_url: urls.get(r.item_id) ?? null, cumulative_certainty: Number(r.cumulative_certainty.toFixed(4)) }));
  }
}

/** Sentences ordered by how much of the item's vocabulary they carry (term frequency over the item). */
function byCentrality(sentences: string[]): string[] {
  const terms = sentences.map((s) => new Set(contentTerms(s)));
  const frequency = new Map<string, number>();
  for (const set of terms) for (const term of set) frequency.set(term, (frequency.get(term) ?? 0) + 1);
  const score = (set: Set<string>) => [...set].reduce((sum, term) => sum + frequency.get(term)! - 1, 0) / Math.sqrt(set.size || 1);
  return sentences
    .map((sentence, index) => ({ sentence, index, score: score(terms[index]) }))
    .sort((a, b) => b.score - a.score || a.index - b.index)
    .map(({ sentence }) => sentence);
}

/** The first sentences, whole, within `chars` characters (at least the first). */
function upTo(sentences: string[], chars: number): string | undefined {
  let out = '';
  for (const sentence of sentences) {
    if (out && out.length + 1 + sentence.length > chars) break;
    out = out ? `${out} ${sentence}` : sentence;
  }
  return out || undefined;
}
