// Every route family of the core API.
import type { RouteDef } from '../route.ts';

export function allRoutes(): RouteDef<any, any, any>[] {
  return [];
}
