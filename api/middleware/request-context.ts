// First stage: a request id on every response, the W3C traceparent echoed when valid, the client IP.
import { newRequestId } from '../../lib/ids.ts';
import type { Permission } from '../../lib/permissions.ts';
import type { OrgContext, Principal, RequestContext, SpaceContext } from '../context.ts';
import { clientIp, type Request, type Response, type TrustFn } from '../http.ts';

const EMPTY: ReadonlySet<Permission> = new Set<Permission>();
const TRACEPARENT = /^[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

/** The context of one request; the client IP (proxy-aware, so not free) is worked out on first read. */
class Context implements RequestContext {
  readonly requestId = newRequestId();
  readonly userAgent: string | undefined;
  principal?: Principal = undefined;
  org?: OrgContext = undefined;
  space?: SpaceContext = undefined;
  permissions: ReadonlySet<Permission> = EMPTY;
  endUserId?: string = undefined;
  apiVersion?: string = undefined;
  viewAs?: string = undefined;
  private address: string | undefined = undefined;

  constructor(private readonly req: Request, private readonly trust: TrustFn | null) {
    this.userAgent = req.headers['user-agent'];
  }

  get ip(): string {
    return (this.address ??= clientIp(this.req, this.trust));
  }
}

export function requestContext(req: Request, res: Response, trust: TrustFn | null): void {
  const ctx = new Context(req, trust);
  req.ctx = ctx;
  res.setHeader('Request-Id', ctx.requestId);
  const tp = req.headers.traceparent;
  if (typeof tp === 'string' && tp.length === 55 && TRACEPARENT.test(tp) && !tp.startsWith('ff')) {
    res.setHeader('traceparent', tp);
  }
}
