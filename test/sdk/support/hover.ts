// What an editor shows on hover over `client.<member>`: the TypeScript language service's
// quick info (the signature as displayed, the documentation, the JSDoc tags), read for a
// file that imports `Platform` from `entry` (the SDK's source, or a built index.d.ts).
import ts from 'typescript';
import { withService } from './compile.js';

export interface Hover {
  /** The signature line, e.g. `(method) ManagementAgentsResource.get(agentId: string, ...): APIPromise<AgentResponse>`. */
  display: string;
  doc: string;
  /** Tags by name; `@param` tags as `param <name>`, several `@deprecated` joined. */
  tags: Record<string, string>;
}

export interface Surface {
  hovers: Record<string, Hover>;
  /** Every name the entry exports. */
  exports: string[];
}

/** Hovers over `p.<member>` for each member path (`chat.completions.create`, `createResponseV1`, ...), and the entry's exports. */
export function readSurface(entry: string, members: string[]): Surface {
  const lines = [`import { Platform } from ${JSON.stringify(entry)};`, 'declare const p: Platform;', ...members.map((m) => `p.${m};`)];
  return withService(`${lines.join('\n')}\n`, (service, file) => {
    const hovers: Record<string, Hover> = {};
    let offset = lines[0]!.length + 1 + lines[1]!.length + 1;
    for (const member of members) {
      // On the last name of the member path, as a pointer resting on it.
      const info = service.getQuickInfoAtPosition(file, offset + `p.${member}`.length - 1);
      offset += `p.${member};`.length + 1;
      if (!info) throw new Error(`no hover for p.${member}`);
      const tags: Record<string, string> = {};
      for (const tag of info.tags ?? []) {
        const body = ts.displayPartsToString(tag.text);
        const key = tag.name === 'param' ? `param ${body.split(/\s/)[0]}` : tag.name;
        tags[key] = tags[key] === undefined ? body : `${tags[key]}\n${body}`;
      }
      hovers[member] = { display: ts.displayPartsToString(info.displayParts), doc: ts.displayPartsToString(info.documentation), tags };
    }
    const program = service.getProgram()!;
    const checker = program.getTypeChecker();
    const imported = program.getSourceFile(file)!.statements.find(ts.isImportDeclaration)!;
    const module = checker.getSymbolAtLocation(imported.moduleSpecifier)!;
    const exports = checker.getExportsOfModule(module).map((symbol) => symbol.name);
    return { hovers, exports };
  });
}
