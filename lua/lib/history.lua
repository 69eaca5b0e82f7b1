--[[
  history: credits spent and refunded per UTC day, for charts (src/credits.ts#history).
  The history hash holds '<day>s' (spent) and '<day>r' (refunded), day = whole days since the
  epoch. A charge and a hold's settlement count as spent when they happen; a refund counts
  the day it is made. Days older than historyDays are dropped on the first movement of a
  day, so the hash stays bounded; historyDays 0 keeps no history.
  ctx fields used: historyKey, historyDays, now.
]]

local HISTORY_DAY_MS = 86400000

local function history_trim(historyKey, oldestDay)
  local old = {}
  for _, field in ipairs(redis.call('HKEYS', historyKey)) do
    if tonumber(string.sub(field, 1, -2)) < oldestDay then
      old[#old + 1] = field
    end
  end
  if #old > 0 then
    redis.call('HDEL', historyKey, unpack(old))
  end
end

-- Count amount credits of kind 's' (spent) or 'r' (refunded) on today's entry; amountText, when
-- the caller has it, is the amount as text (spares a number-to-text step).
local function history_add(ctx, kind, amount, amountText)
  if ctx.historyDays == 0 or amount <= 0 then
    return
  end
  local day = math.floor(ctx.now / HISTORY_DAY_MS)
  if redis.call('HINCRBY', ctx.historyKey, day .. kind, amountText or amount) == amount then
    history_trim(ctx.historyKey, day - ctx.historyDays + 1)
  end
end

-- Days from fromDay on that have an entry: a flat list day, spent, refunded, ... (oldest first).
local function history_read(historyKey, fromDay)
  local flat, byDay, days = redis.call('HGETALL', historyKey), {}, {}
  for i = 1, #flat, 2 do
    local day, kind = tonumber(string.sub(flat[i], 1, -2)), string.sub(flat[i], -1)
    if day >= fromDay then
      if not byDay[day] then
        byDay[day] = { s = 0, r = 0 }
        days[#days + 1] = day
      end
      byDay[day][kind] = tonumber(flat[i + 1])
    end
  end
  table.sort(days)
  local out = {}
  for _, day in ipairs(days) do
    out[#out + 1], out[#out + 2], out[#out + 3] = day, byDay[day].s, byDay[day].r
  end
  return out
end
