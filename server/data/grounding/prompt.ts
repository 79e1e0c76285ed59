// How retrieved passages reach the model: one system message, an instruction any model
// follows plus the passages as numbered `<source>` blocks. The numbers are the positions
// in the answer's `citations`, so a model that cites `[n]` names the passage that supports
// the statement. The built-in local model reads the same blocks
// (server/providers/local/extractive-answer.ts) and answers from them extractively.
import type { ChatMessage } from '../../providers/types.js';
import type { Source } from './sources.js';

export interface GroundingOptions {
  publisher: string;
  /** Ask for `[n]` markers after each statement (when the caller wants citations). */
  cite: boolean;
}

export function groundingMessage(sources: readonly Source[], { publisher, cite }: GroundingOptions): ChatMessage {
  const instruction =
    sources.length === 0
      ? `No passage of ${publisher}'s content matched the user's question. Answer from general knowledge and say that ${publisher}'s content does not cover it.`
      : `Answer the user's question from the numbered sources below, passages of ${publisher}'s content. Rely on them rather than on general knowledge; if they do not answer the question, say so.` +
        (cite ? ' After each statement, cite the source that supports it by its number in square brackets, like [1].' : '');
  const blocks = sources.map(
    (source, index) => `<source id="${index + 1}" title="${attribute(source.title ?? '')}">\n${body(source.snippet)}\n</source>`,
  );
  const content = `${instruction}\n\n<sources publisher="${attribute(publisher)}" cite="${cite}">\n${blocks.join('\n')}${blocks.length ? '\n' : ''}</sources>`;
  return { role: 'system', content };
}

function attribute(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/\n/g, ' ');
}

/** A passage cannot close its own block early. */
function body(text: string): string {
  return text.replace(/<\/?sources?\b/gi, (tag) => tag.replace('<', '&lt;'));
}
