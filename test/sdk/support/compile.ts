// The TypeScript language service over one snippet, as a consumer's editor would check it
// (strict, Node ESM, DOM): what the hover checks read and what the drift checks compile.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';

/** Runs `use` on a language service over `text`, written to a temporary file (imports in it must be absolute). */
export function withService<T>(text: string, use: (service: ts.LanguageService, file: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'sdk-compile-'));
  const file = join(dir, 'snippet.ts');
  writeFileSync(file, text);
  const options: ts.CompilerOptions = {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts', 'lib.dom.iterable.d.ts'],
    strict: true,
    skipLibCheck: true,
    noEmit: true,
  };
  const host: ts.LanguageServiceHost = {
    getScriptFileNames: () => [file],
    getScriptVersion: () => '1',
    getScriptSnapshot: (name) => (ts.sys.fileExists(name) ? ts.ScriptSnapshot.fromString(readFileSync(name, 'utf8')) : undefined),
    getCurrentDirectory: () => dir,
    getCompilationSettings: () => options,
    getDefaultLibFileName: ts.getDefaultLibFilePath,
    fileExists: ts.sys.fileExists,
    readFile: ts.sys.readFile,
    readDirectory: ts.sys.readDirectory,
    directoryExists: ts.sys.directoryExists,
    getDirectories: ts.sys.getDirectories,
  };
  const service = ts.createLanguageService(host);
  try {
    return use(service, file);
  } finally {
    service.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The compile errors of `lines`, keyed by the text of the line they are on: `TS<code>` each, in order. */
export function typeErrors(lines: string[]): Record<string, string[]> {
  return withService(`${lines.join('\n')}\n`, (service, file) => {
    const errors: Record<string, string[]> = {};
    for (const diagnostic of [...service.getSyntacticDiagnostics(file), ...service.getSemanticDiagnostics(file)]) {
      const line = lines[diagnostic.file!.getLineAndCharacterOfPosition(diagnostic.start!).line]!;
      (errors[line] ??= []).push(`TS${diagnostic.code}`);
    }
    return errors;
  });
}
