#!/usr/bin/env node
// Kept outside dist/ so package managers can link the bin before the first build.
import "../dist/cli.js";
