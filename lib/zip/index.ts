// The ZIP reader and writer used for AFPS archives and bundles.
export { readZip, type ZipLimits } from './read-zip.ts';
export { writeZip, encodeZip, type RawZipEntry } from './write-zip.ts';
export { classifyEntryName, compareEntryNames, type EntryNameVerdict } from './entry-name.ts';
