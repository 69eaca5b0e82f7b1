/** Result codes of the Lua scripts: lua/lib/codes.lua's CODE, given to TypeScript by the bundle. */
export { CODE as Code } from "./generated/codes.ts";
import type { CODE } from "./generated/codes.ts";

/** One of the codes. */
export type Code = (typeof CODE)[keyof typeof CODE];
