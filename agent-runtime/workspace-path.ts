// The path guard of the agent's workspace tools. A path the model gives is relative to the
// workspace: no absolute path, no '..' segment, no NUL, bounded lengths. That lexical check is
// not enough, because the workspace can hold symbolic links (a skill's, or ones the shell made,
// possibly while a tool runs), so every open is checked on what was opened:
// - reads open the path, then ask the kernel where the open file is (/proc/self/fd/N) and refuse
//   it unless that is inside the workspace's real path: a link (or a linked parent folder)
//   pointing out is refused, however it was swapped in before the open;
// - writes walk the folders one at a time from an open handle of the workspace, each opened
//   through the previous one's handle with O_NOFOLLOW (openat by way of /proc/self/fd), so no
//   link anywhere on the way is followed and nothing is created outside.
// FIFOs and devices are refused (opened non-blocking, then checked to be regular files), and a
// file with another hard link (which could be a name for a file outside) is neither read nor written.
import { closeSync, constants, fstatSync, ftruncateSync, lstatSync, mkdirSync, openSync, readlinkSync, realpathSync, type Stats } from 'node:fs';
import path from 'node:path';

export const MAX_PATH_BYTES = 4096;
export const MAX_SEGMENT_BYTES = 255;

export class WorkspacePathError extends Error {
  constructor(readonly given: string, reason: string) {
    super(`path ${JSON.stringify(given.slice(0, 200))} is refused: ${reason}`);
  }
}

/**
 * The normalized relative path ('.' for the workspace itself), or a WorkspacePathError.
 * allowRoot: whether the workspace itself (empty path or '.') is acceptable.
 */
export function checkRelativePath(given: unknown, allowRoot = false): string {
  if (typeof given !== 'string') throw new WorkspacePathError(String(given), 'a path must be a string');
  if (given.includes('\0')) throw new WorkspacePathError(given, 'it contains a NUL character');
  if (Buffer.byteLength(given) > MAX_PATH_BYTES) throw new WorkspacePathError(given, `it is longer than ${MAX_PATH_BYTES} bytes`);
  if (given.startsWith('/')) throw new WorkspacePathError(given, 'absolute paths are outside the workspace; give a path relative to it');
  const segments = given.split('/').filter((s) => s !== '' && s !== '.');
  if (segments.some((s) => s === '..')) throw new WorkspacePathError(given, "'..' leaves the workspace");
  if (segments.some((s) => Buffer.byteLength(s) > MAX_SEGMENT_BYTES)) throw new WorkspacePathError(given, `a name is longer than ${MAX_SEGMENT_BYTES} bytes`);
  if (segments.length === 0) {
    if (allowRoot) return '.';
    throw new WorkspacePathError(given, 'it names the workspace itself, not a file in it');
  }
  return segments.join('/');
}

const fdPath = (fd: number) => `/proc/self/fd/${fd}`;

export interface OpenedEntry {
  fd: number;
  stat: Stats;
  /** the path relative to the workspace */
  rel: string;
}

export class WorkspaceRoot {
  /** the workspace's real path: what every open file must be inside */
  readonly real: string;

  constructor(dir: string) {
    this.real = realpathSync(dir);
  }

  /** Whether an absolute real path is the workspace or inside it. */
  contains(realPath: string): boolean {
    return realPath === this.real || realPath.startsWith(`${this.real}/`);
  }

  /** Refuses (and closes) an open file that is not inside the workspace. */
  private confirmInside(fd: number, given: string): void {
    let where: string;
    try {
      where = readlinkSync(fdPath(fd));
    } catch {
      closeSync(fd);
      throw new WorkspacePathError(given, 'where it leads cannot be checked');
    }
    if (!this.contains(where)) {
      closeSync(fd);
      throw new WorkspacePathError(given, 'it leads outside the workspace (a symbolic link pointing out)');
    }
  }

  private openChecked(given: unknown, flags: number, allowRoot: boolean): OpenedEntry {
    const rel = checkRelativePath(given, allowRoot);
    let fd: number;
    try {
      fd = openSync(path.join(this.real, rel), flags);
    } catch (err) {
      throw describeOpenError(String(given), err);
    }
    this.confirmInside(fd, String(given));
    return { fd, stat: fstatSync(fd), rel };
  }

  /** A regular file opened for reading; links inside the workspace are followed, none out of it. */
  openFile(given: unknown): OpenedEntry {
    const opened = this.openChecked(given, constants.O_RDONLY | constants.O_NONBLOCK, false);
    if (!opened.stat.isFile() || opened.stat.nlink > 1) {
      closeSync(opened.fd);
      const reason = opened.stat.isDirectory() ? 'it is a folder, not a file' : opened.stat.isFile() ? 'it has other hard links' : 'it is not a regular file';
      throw new WorkspacePathError(String(given), reason);
    }
    return opened;
  }

  /** A folder opened for listing; '.' or '' is the workspace. */
  openFolder(given: unknown): OpenedEntry {
    return this.openChecked(given ?? '.', constants.O_RDONLY | constants.O_DIRECTORY, true);
  }

  /** The path through an open folder's handle to a name in it: openat without the syscall. */
  static inFolder(folderFd: number, name: string): string {
    return `${fdPath(folderFd)}/${name}`;
  }

  /**
   * Opens (creating when asked) a regular file for writing, truncated. Every folder on the way is
   * opened through its parent's handle without following links (created when missing); the file
   * itself is opened with O_NOFOLLOW.
   */
  openForWrite(given: unknown, opts: { create: boolean }): OpenedEntry {
    const rel = checkRelativePath(given, false);
    const segments = rel.split('/');
    const name = segments.pop()!;
    let folder = openSync(this.real, constants.O_RDONLY | constants.O_DIRECTORY);
    try {
      for (const segment of segments) {
        const next = WorkspaceRoot.inFolder(folder, segment);
        const dirFlags = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
        let fd: number;
        try {
          fd = openSync(next, dirFlags);
        } catch (err) {
          if (isLink(next)) throw new WorkspacePathError(String(given), 'a symbolic link is on the way (writes never follow links)');
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || !opts.create) throw describeOpenError(String(given), err);
          try {
            mkdirSync(next);
          } catch (mkErr) {
            if ((mkErr as NodeJS.ErrnoException).code !== 'EEXIST') throw describeOpenError(String(given), mkErr);
          }
          try {
            fd = openSync(next, dirFlags);
          } catch (again) {
            throw describeOpenError(String(given), again);
          }
        }
        closeSync(folder);
        folder = fd;
      }
      // truncated only once checked: never a file with another name (a hard link) or not regular
      const flags = constants.O_WRONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | (opts.create ? constants.O_CREAT : 0);
      let fd: number;
      try {
        fd = openSync(WorkspaceRoot.inFolder(folder, name), flags, 0o644);
      } catch (err) {
        throw describeOpenError(String(given), err);
      }
      const stat = fstatSync(fd);
      if (!stat.isFile() || stat.nlink > 1) {
        closeSync(fd);
        throw new WorkspacePathError(String(given), stat.isFile() ? 'it has other hard links' : 'it is not a regular file');
      }
      this.confirmInside(fd, String(given));
      ftruncateSync(fd, 0);
      return { fd, stat, rel };
    } finally {
      closeSync(folder);
    }
  }
}

function isLink(p: string): boolean {
  try {
    return lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

function describeOpenError(given: string, err: unknown): Error {
  const code = (err as NodeJS.ErrnoException).code;
  switch (code) {
    case 'ENOENT':
      return new WorkspacePathError(given, 'no such file or folder in the workspace');
    case 'ELOOP':
      return new WorkspacePathError(given, 'a symbolic link is on the way (writes never follow links)');
    case 'ENOTDIR':
      return new WorkspacePathError(given, 'a part of it is not a folder');
    case 'EISDIR':
      return new WorkspacePathError(given, 'it is a folder, not a file');
    case 'ENXIO':
      return new WorkspacePathError(given, 'it is not a regular file');
    case 'ENAMETOOLONG':
      return new WorkspacePathError(given, 'it is too long');
    case 'EACCES':
    case 'EPERM':
    case 'EROFS':
      return new WorkspacePathError(given, 'permission denied');
    default:
      return new WorkspacePathError(given, (err as Error).message);
  }
}
