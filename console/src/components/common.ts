// Small pieces every page uses: loading and error states, the refused-scope message, a
// table that scrolls sideways on a phone, and a hook that loads (and optionally polls) data.
import { html } from 'htm/preact';
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiFailure } from '../api.js';

export function Refused({ scope }: { scope: string }) {
  return html`<div class="notice refused" role="alert">
    <strong>Not available with this key.</strong> This page needs the <code>${scope}</code> scope, which the key you signed in with does
    not have. Sign in with a key that holds it (a key with <code>keys:manage</code> can create one on the Keys page).
  </div>`;
}

export function Failure({ error }: { error: unknown }) {
  if (error instanceof ApiFailure && error.status === 403) {
    return html`<div class="notice refused" role="alert"><strong>Refused:</strong> ${error.message}</div>`;
  }
  const message = error instanceof Error ? error.message : String(error);
  const trace = error instanceof ApiFailure && error.traceId ? html` <span class="muted">(trace ${error.traceId})</span>` : null;
  return html`<div class="notice error" role="alert"><strong>Error:</strong> ${message}${trace}</div>`;
}

export const Loading = () => html`<p class="muted">Loading…</p>`;

export function Section({ title, children, actions }: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  return html`<section class="card">
    <header class="card-head"><h2>${title}</h2>${actions ? html`<div class="actions">${actions}</div>` : null}</header>
    ${children}
  </section>`;
}

export function Table({ head, rows, empty = 'Nothing yet.' }: { head: string[]; rows: ComponentChildren[][]; empty?: string }) {
  if (rows.length === 0) return html`<p class="muted">${empty}</p>`;
  return html`<div class="table-wrap">
    <table>
      <thead><tr>${head.map((h) => html`<th>${h}</th>`)}</tr></thead>
      <tbody>${rows.map((cells) => html`<tr>${cells.map((c, i) => html`<td data-label=${head[i]}>${c}</td>`)}</tr>`)}</tbody>
    </table>
  </div>`;
}

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
  /** When the data was last loaded. */
  at: number | null;
}

/** Loads on mount and whenever `deps` change; with `pollMs`, again every pollMs while mounted. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[], pollMs?: number): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean; at: number | null }>({ loading: true, at: null });
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, loading: false, at: Date.now() }),
      (error: unknown) => live && setState((s) => ({ ...s, error, loading: false })),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  useEffect(() => {
    if (!pollMs) return;
    const timer = setInterval(reload, pollMs);
    return () => clearInterval(timer);
  }, [pollMs]);
  return { data: state.data, error: state.error, loading: state.loading, reload, at: state.at };
}
