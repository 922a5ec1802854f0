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
  const shell = toolNames.includes('workspace_bash');
  parts.push(
    '## Workspace\n\n' +
      `Your workspace is the folder ${ws.dir}. The workspace_list, workspace_read, workspace_write, workspace_edit and ` +
      'workspace_search tools act on it; give them paths relative to it (no leading /, no ..): nothing outside it can be reached.' +
      (shell ? ' workspace_bash runs a command with the workspace as its working directory.' : ' No shell is available in this run.'),
  );
  if (ws.skills.length > 0) {
    const list = ws.skills.map((s) => `- ${s.name}: ${s.description || '(no description)'} (location: ${s.folder}/, instructions in ${s.path})`).join('\n');
    const scripts = shell
      ? ` Run a skill's scripts with workspace_bash, e.g. \`bash ${ws.skills[0].folder}/scripts/<script>\`.`
      : '';
    parts.push(
      `## Skills\n\nThese skills are installed in the workspace, each in its own folder under skills/. ` +
        `Before using one, read its SKILL.md with workspace_read; it may point to references/ (read them when needed), scripts/ and assets/.${scripts}\n\n${list}`,
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
