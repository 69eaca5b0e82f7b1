/** A Lua source the build cannot compile or minify: the message names the file and line. */
export class LuaCompileError extends Error {
  override readonly name = 'LuaCompileError';
}
