// The files suite over an S3-compatible server (s3rver) on loopback: real S3 over HTTP through
// @aws-sdk/client-s3, multipart uploads included.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { filesSuite } from './files-suite.ts';

const BUCKET = 'platform-files';

filesSuite(async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'files-s3-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: dir, configureBuckets: [{ name: BUCKET, configs: [] }] });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const s3 = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
  return {
    env: {
      FILE_STORAGE: 's3', S3_ENDPOINT: endpoint, S3_BUCKET: BUCKET, S3_REGION: 'us-east-1',
      S3_ACCESS_KEY_ID: 'S3RVER', S3_SECRET_ACCESS_KEY: 'S3RVER', S3_FORCE_PATH_STYLE: 'true',
    },
    exists: async (key) => s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key })).then(() => true, () => false),
    async stop() {
      s3.destroy();
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
