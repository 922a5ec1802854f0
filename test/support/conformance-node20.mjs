// Runs the MCP conformance suite (@modelcontextprotocol/conformance) on Node 20: its bundle imports
// fs.globSync, which Node 20 lacks. Loaded with `node --import`; changes nothing else.
import { register } from 'node:module';

register('./conformance-node20-hooks.mjs', import.meta.url);
