/** Result codes of the Lua scripts: lua/lib/codes.lua's CODE, given to TypeScript by the bundle. */
import { CODE } from './generated/codes.ts';

/** The codes by name. */
export const Code = CODE;

/** One of the codes. */
export type Code = (typeof CODE)[keyof typeof CODE];
