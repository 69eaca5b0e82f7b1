--[[
  usage: the account's whole quota state on one surface, without counting a request
  (docs/limits.md: the usage endpoint is free). With a key id it first checks the API key, so
  a usage poll is one round trip (src/apiKeys.ts#verify with usage). What it reports is
  current: the account brought to its current cycle, and lapsed holds tidied first
  (HOLDS_DUE). Writes nothing but a rollover that is due and the removal of an expired key.
  Layout: look        KEYS[1] account, ARGV[1] nowMs (lib/prologue.lua)
  KEYS[2] cycles        hash   ended cycles (written on rollover)
  KEYS[3] holdsActive   zset   open hold ids scored by lease expiry (ms)
  ARGV[2] surface       string   the surface whose windows are reported
  ARGV[3] stagger       integer  the subject's offset of fixed windows in ms
  ARGV[4] keyId         string   the presented key's id, '' without a key
  ARGV[5] keyDigest     string   the presented key's digest
  KEYS[4] outbox        stream the subject's events (lib/events.lua; written when a rollover fires one)
  ARGV[6] eventsMax     integer  events the outbox holds at most
  Returns KEY_REFUSED: {code, reason 'unknown'|'expired'|'surface_not_allowed'}
  Returns HOLDS_DUE: {code, ...due string}   the holds to tidy first (lua/tidyHolds.lua); nothing changed
  Returns: {code, windows windows, state json, events integer?, eventsDropped integer?}   windows:
    lib/windows.lua's reply; state: the account's attributes plus now and active (open holds);
    events, eventsDropped: the events a rollover wrote, and those it found no room for
    Codes: OK, KEY_REFUSED, HOLDS_DUE, NO_ACCOUNT, UNKNOWN_SURFACE
]]
--@include "lib/codes.lua"
--@include "lib/prologue.lua"
--@include "lib/apiKeys.lua"
--@include "lib/holds.lua"
--@include "lib/windows.lua"
--@include "lib/events.lua"

local ctx = prologue_look(KEYS, ARGV)
ctx.cyclesKey, ctx.holdsActiveKey = KEYS[2], KEYS[3]
local surface, stagger, keyId, keyDigest = ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5]
ctx.outboxKey, ctx.eventsMax = KEYS[4], tonumber(ARGV[6])

if keyId ~= '' then
  local record = redis.call('HGET', ctx.accountKey, KEY_FIELD.record .. keyId)
  local refusal = key_refusal(ctx.accountKey, keyId, record, keyDigest, surface, ctx.now)
  if refusal then
    return { CODE.KEY_REFUSED, refusal }
  end
end
local a = cycle_current_account(ctx)
if not a then
  return { CODE.NO_ACCOUNT, '' }
end
local windows = a.windows[surface]
if not windows then
  return { CODE.UNKNOWN_SURFACE, '' }
end
local due = holds_due_reply(ctx, false)
if due then
  return due
end
cycle_save(ctx, a)
a.active = redis.call('ZCARD', ctx.holdsActiveKey)
a.now = ctx.now
local reply = windows_count(windows, a.counters[surface], ctx.now, 0, stagger)
a.counters, a.archive = nil, nil
reply[#reply + 1] = cjson.encode(a)
reply[#reply + 1], reply[#reply + 2] = events_reply(ctx)
return reply
