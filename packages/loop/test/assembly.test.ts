/**
 * The loop is assembled in dependency order: a structural check of `src/loop.ts` (and of the
 * worker's steps in `src/dispatch.ts`), read with the TypeScript compiler's parser. Behaviour is
 * covered by every other test of the project; this keeps the shape from drifting back.
 */
import { readFileSync } from 'node:fs';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const source = (file: string): string => readFileSync(new URL(`../src/${file}`, import.meta.url), 'utf8');

/**
 * Every closure (arrow function or function expression) created in `className`'s constructor that
 * mentions `this`, or a constructor local declared after the closure: either could be called — by a
 * part the closure was handed to — before what it reaches exists. A direct read of an unassigned
 * field is already a type error; a closure's is not, hence this check.
 */
export function lateClosures(text: string, className: string): string[] {
  const file = ts.createSourceFile('loop.ts', text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const klass = file.statements.find((s): s is ts.ClassDeclaration => ts.isClassDeclaration(s) && s.name?.text === className);
  const ctor = klass?.members.find((m): m is ts.ConstructorDeclaration => ts.isConstructorDeclaration(m));
  if (ctor?.body === undefined) return [`no constructor of ${className}`];
  // The constructor's own locals (any depth of destructuring), with where each is declared.
  const locals = new Map<string, number>();
  const declare = (name: ts.BindingName, at: number): void => {
    if (ts.isIdentifier(name)) locals.set(name.text, at);
    else for (const element of name.elements) if (!ts.isOmittedExpression(element)) declare(element.name, at);
  };
  for (const statement of ctor.body.statements) {
    if (ts.isVariableStatement(statement))
      for (const d of statement.declarationList.declarations) declare(d.name, d.getStart(file));
  }
  const line = (node: ts.Node): number => file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1;
  const inspect = (closure: ts.ArrowFunction | ts.FunctionExpression): void => {
    const start = closure.getStart(file);
    const visit = (node: ts.Node): void => {
      if (node.kind === ts.SyntaxKind.ThisKeyword)
        found.push(`line ${line(node)}: a closure created at line ${line(closure)} uses this`);
      if (ts.isIdentifier(node)) {
        const at = locals.get(node.text);
        const property = ts.isPropertyAccessExpression(node.parent) && node.parent.name === node;
        const key = ts.isPropertyAssignment(node.parent) && node.parent.name === node;
        if (at !== undefined && at > start && !property && !key)
          found.push(`line ${line(node)}: a closure created at line ${line(closure)} uses ${node.text}, declared after it`);
      }
      ts.forEachChild(node, visit);
    };
    visit(closure.body);
  };
  const walk = (node: ts.Node): void => {
    if (ts.isArrowFunction(node) || ts.isFunctionExpression(node)) inspect(node);
    ts.forEachChild(node, walk);
  };
  walk(ctor.body);
  return found;
}

/** Lines of each named method of `className`, from its name to its closing brace. */
function methodLines(text: string, className: string): Map<string, number> {
  const file = ts.createSourceFile('x.ts', text, ts.ScriptTarget.Latest, true);
  const klass = file.statements.find((s): s is ts.ClassDeclaration => ts.isClassDeclaration(s) && s.name?.text === className);
  const lines = new Map<string, number>();
  for (const member of klass?.members ?? []) {
    if (!ts.isMethodDeclaration(member)) continue;
    const from = file.getLineAndCharacterOfPosition(member.name.getStart(file)).line;
    const to = file.getLineAndCharacterOfPosition(member.getEnd()).line;
    lines.set(member.name.getText(file), to - from + 1);
  }
  return lines;
}

describe('assembly', () => {
  it('[loop: Assembly order] the constructor creates no closure over this or over a part built after it', () => {
    expect(lateClosures(source('loop.ts'), 'ReconcileLoop')).toEqual([]);
  });

  it('[loop: Assembly order] the check finds a closure over a field assigned later and over a later local', () => {
    const wiredLate = `
      class Loop {
        #a; #b;
        constructor() {
          const first = 1;
          const early = () => first;
          const late = () => second + this.#b;
          const second = { first };
          this.#a = new A({ onX: () => this.#b.go() });
          this.#b = second;
        }
      }`;
    const found = lateClosures(wiredLate, 'Loop');
    expect(found).toEqual([
      'line 7: a closure created at line 7 uses second, declared after it',
      'line 7: a closure created at line 7 uses this',
      'line 9: a closure created at line 9 uses this',
    ]);
  });

  it('[loop: Worker steps] a worker is take → admit → run, each at most 30 lines (processNextWorkItem is 20)', () => {
    const lines = methodLines(source('dispatch.ts'), 'Workers');
    for (const step of ['work', '#take', '#admit', '#run']) {
      expect(lines.has(step), step).toBe(true);
      expect(lines.get(step), step).toBeLessThanOrEqual(30);
    }
  });
});
