// The ZIP reader and writer used for AFPS archives and bundles.
export { readZip, planZip, inflatedBytesTotal, type ZipLimits, type ReadZipOptions } from './read-zip.ts';
export { writeZip, encodeZip, type RawZipEntry } from './write-zip.ts';
export { classifyEntryName, compareEntryNames, type EntryNameVerdict } from './entry-name.ts';
