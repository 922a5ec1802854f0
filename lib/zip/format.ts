// Record signatures and fixed sizes of the ZIP format (APPNOTE 6.3), shared by reader and writer.

export const SIG_LOCAL_HEADER = 0x04034b50;
export const SIG_CENTRAL_HEADER = 0x02014b50;
export const SIG_END_OF_CENTRAL_DIRECTORY = 0x06054b50;
export const SIG_ZIP64_END_OF_CENTRAL_DIRECTORY = 0x06064b50;
export const SIG_ZIP64_LOCATOR = 0x07064b50;

export const LOCAL_HEADER_SIZE = 30;
export const CENTRAL_HEADER_SIZE = 46;
export const END_OF_CENTRAL_DIRECTORY_SIZE = 22;
export const ZIP64_END_OF_CENTRAL_DIRECTORY_SIZE = 56;
export const ZIP64_LOCATOR_SIZE = 20;
export const MAX_COMMENT_LENGTH = 0xffff;

export const ZIP64_EXTRA_ID = 0x0001;
/** a 32-bit field holding this value says "look in the ZIP64 extra field" */
export const ZIP64_MARKER_32 = 0xffffffff;
export const ZIP64_MARKER_16 = 0xffff;

export const METHOD_STORED = 0;
export const METHOD_DEFLATE = 8;

export const FLAG_ENCRYPTED = 0x0001;
export const FLAG_STRONG_ENCRYPTION = 0x0040;
export const FLAG_UTF8_NAME = 0x0800;
