/** Result codes of the Lua scripts: lua/lib/codes.lua's CODE, given to TypeScript by the bundle. */
export { CODE as Code } from "./bundle.generated.ts";
import type { CODE } from "./bundle.generated.ts";

/** One of the codes. */
export type Code = (typeof CODE)[keyof typeof CODE];
