--[[
  prologue: the layout every script of a subject opens with, read in one place. KEYS and ARGV
  start with the subject's shared keys and the shared arguments, always at the same positions,
  and a script's own keys and arguments follow them (docs/scripts.md):
    a look      KEYS[1] account                          ARGV[1] nowMs
    a movement  KEYS[1] account  KEYS[2] cycles          ARGV[1] nowMs        ARGV[2] journalTrim
                KEYS[3] journal  KEYS[4] history         ARGV[3] journalBound ARGV[4] historyDays
  A movement's own keys start at KEYS[5] and its own arguments at ARGV[5]; a look's at KEYS[2]
  and ARGV[2]. The ctx a prologue returns is what lib/cycle.lua, lib/journal.lua and
  lib/history.lua read: accountKey, now, and for a movement cyclesKey, journalKey, historyKey,
  journalTrim, journalBound, historyDays.
]]
--@include "clock.lua"

local function prologue_look(KEYS, ARGV)
  return { accountKey = KEYS[1], now = clock_now(ARGV[1]) }
end

local function prologue_move(KEYS, ARGV)
  return { accountKey = KEYS[1], cyclesKey = KEYS[2], journalKey = KEYS[3], historyKey = KEYS[4],
    now = clock_now(ARGV[1]), journalTrim = ARGV[2], journalBound = ARGV[3], historyDays = tonumber(ARGV[4]) }
end
