// Ingestion: each publisher (its id, which uploads take, and its name, which search takes)
// with its items per state; creating a publisher; the failed items with their reasons and a
// retry for those whose file is still held.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import type { IngestionFailure, Publisher, Scope } from '../../../generated/client/types.gen.js';
import { call, callAll } from '../api.js';
import { Failure, Loading, Section, Table, useLoad } from '../components/common.js';
import { count, time } from '../format.js';

const STATES = ['QUEUED', 'FETCHING', 'NORMALIZING', 'CHUNKING', 'EMBEDDING', 'COMPLETED', 'FAILED'];
export const INGESTION_POLL_MS = 5_000;

export function Ingestion({ scopes }: { scopes: readonly Scope[] }) {
  const publishers = useLoad(() => callAll<Publisher>('/api/v1/publishers'), [], INGESTION_POLL_MS);
  const failures = useLoad(() => callAll<IngestionFailure>('/api/v1/ingestion/failures'), [], INGESTION_POLL_MS);
  const [retryError, setRetryError] = useState<unknown>(null);
  const [retried, setRetried] = useState<string | null>(null);
  const canWrite = scopes.includes('data:write');

  const retry = async (itemId: string) => {
    setRetryError(null);
    try {
      await call(`/api/v1/ingestion/items/${itemId}/retry`, { method: 'POST' });
      setRetried(itemId);
      failures.reload();
      publishers.reload();
    } catch (error) {
      setRetryError(error);
    }
  };

  return html`
    ${publishers.error ? html`<${Failure} error=${publishers.error} />` : null}
    ${canWrite ? html`<${CreatePublisher} onCreated=${publishers.reload} />` : null}
    <${Section} title="Items by state, per publisher">
      ${publishers.data
        ? html`<${Table}
            head=${['Publisher', 'publisher_id', ...STATES.map((s) => s.toLowerCase())]}
            rows=${publishers.data.map((p) => [
              html`<strong>${p.name}</strong>`,
              html`<code class="id">${p.id}</code>`,
              ...STATES.map((s) => {
                const n = p.itemsByStatus[s] ?? 0;
                return n === 0 ? html`<span class="muted">0</span>` : s === 'FAILED' ? html`<span class="bad">${count(n)}</span>` : count(n);
              }),
            ])}
          />`
        : html`<${Loading} />`}
      <p class="muted small">Upload with <code>POST :8080/ingestion/v2/files</code> (form field <code>publisher_id</code>); an item is searchable once COMPLETED.</p>
    <//>
    <${Section} title="Failures">
      ${retried ? html`<p class="notice ok" role="status">Item ${retried} is queued again.</p>` : null}
      ${retryError ? html`<${Failure} error=${retryError} />` : null}
      ${failures.error
        ? html`<${Failure} error=${failures.error} />`
        : failures.data
          ? html`<${Table}
              head=${['File', 'Publisher', 'Reason', 'Attempts', 'Failed at', '']}
              rows=${failures.data.map((f) => [
                f.fileName,
                f.publisherName,
                html`<span class="reason">${f.reason ?? 'unknown'}</span>`,
                String(f.attempts),
                time(f.failedAt),
                !canWrite
                  ? html`<span class="muted">needs data:write</span>`
                  : f.retryable
                    ? html`<button type="button" onClick=${() => retry(f.itemId)} aria-label=${`Retry ${f.fileName}`}>Retry</button>`
                    : html`<span class="muted">file gone: upload again</span>`,
              ])}
              empty="No failed items."
            />`
          : html`<${Loading} />`}
    <//>`;
}

function CreatePublisher({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState('');
  const [error, setError] = useState<unknown>(null);
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(null);
    try {
      await call('/api/v1/publishers', { method: 'POST', body: { name } });
      setName('');
      onCreated();
    } catch (e) {
      setError(e);
    }
  };
  return html`<${Section} title="Create a publisher">
    <form class="form row" onSubmit=${submit}>
      <label>Name <input name="publisher-name" value=${name} required maxLength=${100} pattern="[A-Za-z0-9][A-Za-z0-9 ._\\-]*"
        onInput=${(e: Event) => setName((e.target as HTMLInputElement).value)} placeholder="gloo-books" /></label>
      <button type="submit" disabled=${name.trim() === ''}>Create publisher</button>
    </form>
    ${error ? html`<${Failure} error=${error} />` : null}
  <//>`;
}
