#!/usr/bin/env node
// Kept outside dist/ so package managers can link the bin before the first build. It calls runCli()
// instead of relying on dist/cli.js's entry-point check, which compares argv[1] with cli.js and so
// never matches when this shim is what node runs.
import { runCli } from '../dist/cli.js';
runCli(process.argv.slice(2));
