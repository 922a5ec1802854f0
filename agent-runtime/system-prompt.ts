// The conversation the agent starts with: the package's prompt plus what the run provides.
import type { Workspace } from './workspace.ts';

export const OUTPUT_REMINDER =
  'You must call the output tool now with the final result of this run, matching its schema. ' +
  'Do not answer in plain text instead.';

export function buildSystemPrompt(ws: Workspace, toolNames: string[]): string {
  const parts = [ws.prompt.trim()];
  if (ws.input !== undefined) {
    parts.push('## Run input\n\nThe input of this run is the JSON document in the first user message.');
  }
  if (ws.skills.length > 0) {
    const list = ws.skills.map((s) => `- ${s.name} (${s.path})${s.description ? `: ${s.description}` : ''}`).join('\n');
    parts.push(
      `## Skills\n\nSkills are installed in the workspace at ${ws.dir}/skills/. ` +
        `Each has a SKILL.md with its instructions, and may have scripts/, references/ and assets/.\n\n${list}`,
    );
  }
  if (toolNames.includes('output')) {
    parts.push('## Result\n\nWhen the work is done, call the output tool with the result. Its schema is the contract of this run.');
  }
  return parts.join('\n\n');
}

export function buildUserMessage(ws: Workspace): string {
  if (ws.input === undefined) return 'Start the task.';
  return `Run input:\n\n\`\`\`json\n${JSON.stringify(ws.input, null, 2)}\n\`\`\``;
}
