// The README examples a release is proven with, taken from the README text itself (the copy inside the
// published tarball), never copied by hand. A code block takes part when the line right above its
// opening fence is a marker comment, invisible on npm and GitHub:
//
//   <!-- rehearse: run -->                       run this block as a script (exit 0 within the deadline)
//   <!-- rehearse: file NAME.ts -->              write this block as NAME.ts beside the scripts (a later
//                                                block of the same README imports './NAME.js')
//   <!-- rehearse: run kubeconfig NS LABEL=V --> run it with KUBECONFIG pointing at an embedded apiserver
//                                                (@reconcile-loop/testing, as installed) holding two
//                                                pods in namespace NS labelled LABEL=V
//   <!-- rehearse: install -->                   (a sh block) each `npm install`/`pnpm add` line is run
//                                                as printed, with only `--registry URL` added
//
// Used by scripts/release.mjs (installed by name from a registry).

const MARKER = /^<!--\s*rehearse:\s*(run|file|install)\b([^>]*)-->\s*$/;
const FENCE = /^```(ts|typescript|js|mjs)\s*$/;
const SH_FENCE = /^```(sh|bash|shell)\s*$/;

/**
 * The marked blocks of one README, in order: `{ mode: 'run' | 'file', file?, kubeconfig?, code, line }`
 * (`line` is the 1-based line of the opening fence). A marker not followed by a ts/js fence throws, so
 * a marker cannot silently stop applying.
 */
export function readmeExamples(markdown) {
  const lines = markdown.split('\n');
  const out = [];
  for (let i = 0; i < lines.length; i++) {
    const marker = MARKER.exec(lines[i].trim());
    if (!marker) continue;
    const fence = marker[1] === 'install' ? SH_FENCE : FENCE;
    if (!fence.test(lines[i + 1] ?? ''))
      throw new Error(
        `line ${i + 1}: a rehearse marker not followed by a ${marker[1] === 'install' ? 'sh' : 'ts/js'} code fence`,
      );
    const end = lines.findIndex((l, j) => j > i + 1 && l.startsWith('```'));
    if (end < 0) throw new Error(`line ${i + 2}: an unclosed code fence`);
    const args = marker[2].trim().split(/\s+/).filter(Boolean);
    const example = { mode: marker[1], code: `${lines.slice(i + 2, end).join('\n')}\n`, line: i + 2 };
    if (marker[1] === 'install') {
      // One command per line; a trailing comment is the reader's, not the shell's.
      example.commands = example.code
        .split('\n')
        .map((l) => l.replace(/\s+#.*$/, '').trim())
        .filter((l) => /^(npm install|npm i|pnpm add) /.test(l));
      if (example.commands.length === 0)
        throw new Error(`line ${i + 1}: "rehearse: install" block has no npm install / pnpm add line`);
    } else if (marker[1] === 'file') {
      if (!/^[\w.-]+\.ts$/.test(args[0] ?? '')) throw new Error(`line ${i + 1}: "rehearse: file" needs a NAME.ts`);
      example.file = args[0];
    } else if (args[0] === 'kubeconfig') {
      const [namespace, label] = args.slice(1);
      const eq = label?.indexOf('=') ?? -1;
      if (!namespace || eq <= 0) throw new Error(`line ${i + 1}: "rehearse: run kubeconfig" needs NS LABEL=VALUE`);
      example.kubeconfig = { namespace, labels: { [label.slice(0, eq)]: label.slice(eq + 1) } };
    } else if (args.length) {
      throw new Error(`line ${i + 1}: unknown rehearse arguments ${args.join(' ')}`);
    }
    out.push(example);
    i = end;
  }
  return out;
}

/**
 * The harness for a `kubeconfig` example, run from the consumer project: starts the installed embedded
 * apiserver, seeds the pods, writes its kubeconfig, runs the example with KUBECONFIG set, stops the
 * server on every path. Arguments: <example.ts> <spec JSON> <deadline ms>.
 */
export const kubeconfigHarness = `import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startApiServer } from '@reconcile-loop/testing';
const [example, spec, deadlineMs] = process.argv.slice(2);
const { namespace, labels } = JSON.parse(spec);
const server = await startApiServer();
let code = 1;
try {
  server.seedPods(2, { namespace, labels });
  const kubeconfig = example + '.kubeconfig';
  writeFileSync(kubeconfig, server.kubeconfig());
  const child = spawn(process.execPath, [join('node_modules', 'tsx', 'dist', 'cli.mjs'), example], {
    stdio: 'inherit',
    env: { ...process.env, KUBECONFIG: kubeconfig },
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), Number(deadlineMs));
  code = await new Promise((resolve) => child.on('exit', (c, s) => resolve(c ?? (s ? 124 : 1))));
  clearTimeout(timer);
} finally {
  await server.close();
}
process.exit(code);
`;
