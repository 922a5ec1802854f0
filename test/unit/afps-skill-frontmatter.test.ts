import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseSkillFrontmatter } from '../../lib/afps/skill-frontmatter.ts';

describe('SKILL.md frontmatter', () => {
  test('name, description, other keys and the body are read', () => {
    const parsed = parseSkillFrontmatter('---\nname: summarize\ndescription: Short summaries.\nlicense: MIT\n---\n\n# Body\n');
    assert.equal(parsed.name, 'summarize');
    assert.equal(parsed.description, 'Short summaries.');
    assert.equal(parsed.attributes.license, 'MIT');
    assert.equal(parsed.body, '\n# Body\n');
  });

  test('quoted values, comments, CRLF and a byte order mark are handled', () => {
    const text = `\uFEFF---\r\nname: "sum: the skill"\r\n# a comment\r\ndescription: 'It''s short' \r\nversion: 2 # trailing\r\n---\r\nBody`;
    const parsed = parseSkillFrontmatter(text);
    assert.equal(parsed.name, 'sum: the skill');
    assert.equal(parsed.description, "It's short");
    assert.equal(parsed.attributes.version, '2');
  });

  test('block scalars and nested maps are read', () => {
    const text = [
      '---', 'name: sum', 'description: >', '  Summarizes long texts', '  in three sentences.', 'notes: |', '  line one', '    indented', 'metadata:', '  owner: team', '  tags: [a, b]', '---', '',
    ].join('\n');
    const parsed = parseSkillFrontmatter(text);
    assert.equal(parsed.description, 'Summarizes long texts in three sentences.');
    assert.equal(parsed.attributes.notes, 'line one\n  indented');
    assert.equal(parsed.attributes.metadata, '  owner: team\n  tags: [a, b]');
  });

  test('malformed frontmatter is invalid_content', () => {
    const cases = [
      '# Title only',
      '---\nname: sum\ndescription: x\n',
      '---\nname: sum\n---\n',
      '---\ndescription: x\n---\n',
      '---\nname: ""\ndescription: x\n---\n',
      '---\nname: sum\nname: other\ndescription: x\n---\n',
      '---\n  name: sum\ndescription: x\n---\n',
      '---\nname sum\ndescription: x\n---\n',
      '---\nname: "unterminated\ndescription: x\n---\n',
      '---\nname: sum\n  extra: 1\ndescription: x\n---\n',
    ];
    for (const text of cases) assert.throws(() => parseSkillFrontmatter(text), { code: 'invalid_content' }, text);
  });
});
