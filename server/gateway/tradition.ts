// `tradition`: the values-aligned instruction layer of guarded routes (README "Tradition").
// It goes first in the conversation as a system message, is echoed back in the answer, and
// is never sent on direct-mode (v1) requests.
import type { ChatMessage } from '../providers/types.js';

export const TRADITIONS = ['evangelical', 'catholic', 'mainline', 'not_faith_specific'] as const;
export type Tradition = (typeof TRADITIONS)[number];

const COMMON = 'Answer helpfully, honestly and with care for the person asking. Do not invent scripture references or quotations.';

export const TRADITION_INSTRUCTIONS: Record<Tradition | 'default', string> = {
  default: `Where faith or values bear on the question, answer from a general Christian perspective that is respectful of other views. ${COMMON}`,
  evangelical: `Where faith or values bear on the question, answer from an evangelical Christian perspective: the authority of Scripture, personal faith in Christ and the gospel's call. ${COMMON}`,
  catholic: `Where faith or values bear on the question, answer from a Catholic perspective, drawing on Scripture, Tradition and the teaching of the Church. ${COMMON}`,
  mainline: `Where faith or values bear on the question, answer from a mainline Protestant perspective: Scripture read with reason and tradition, and a concern for justice and inclusion. ${COMMON}`,
  not_faith_specific: `Answer without assuming any particular faith tradition; where values bear on the question, present perspectives even-handedly. ${COMMON}`,
};

export function withTradition(messages: ChatMessage[], tradition: Tradition | undefined): ChatMessage[] {
  return [{ role: 'system', content: TRADITION_INSTRUCTIONS[tradition ?? 'default'] }, ...messages];
}
