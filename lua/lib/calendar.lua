--[[
  calendar: billing-cycle boundaries (docs/accounts.md#billing-cycles), mirrored by src/rules/cycles.ts.
  A cycle spec is an anchor instant (ms since epoch, UTC) plus an interval of whole days
  ('d') or whole calendar months ('m'). Month periods are computed from the anchor each
  time, clamped to month end, so Jan 31 -> Feb 28/29 -> Mar 31.
  Civil-date conversions follow Howard Hinnant's days_from_civil / civil_from_days.
]]
local DAY_MS = 86400000

local function days_from_civil(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local mp = (m + 9) % 12
  local doy = math.floor((153 * mp + 2) / 5) + d - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

local function civil_from_days(z)
  z = z + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local y = yoe + era * 400
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  if m <= 2 then y = y + 1 end
  return y, m, d
end

local function days_in_month(y, m)
  local ny, nm = y, m + 1
  if nm > 12 then ny, nm = y + 1, 1 end
  return days_from_civil(ny, nm, 1) - days_from_civil(y, m, 1)
end

-- Start (ms) of the k-th period after the anchor.
local function period_start(anchorMs, unit, len, k)
  if unit == 'd' then
    return anchorMs + k * len * DAY_MS
  end
  local days = math.floor(anchorMs / DAY_MS)
  local msOfDay = anchorMs - days * DAY_MS
  local y, m, d = civil_from_days(days)
  local total = y * 12 + (m - 1) + k * len
  local ny = math.floor(total / 12)
  local nm = total - ny * 12 + 1
  local nd = math.min(d, days_in_month(ny, nm))
  return days_from_civil(ny, nm, nd) * DAY_MS + msOfDay
end

-- The period that contains nowMs: index k, start and end. Before the anchor: period 0.
local function current_period(anchorMs, unit, len, nowMs)
  if nowMs < anchorMs then
    return 0, anchorMs, period_start(anchorMs, unit, len, 1)
  end
  local k
  if unit == 'd' then
    k = math.floor((nowMs - anchorMs) / (len * DAY_MS))
  else
    local ay, am = civil_from_days(math.floor(anchorMs / DAY_MS))
    local ny, nm = civil_from_days(math.floor(nowMs / DAY_MS))
    k = math.floor(((ny - ay) * 12 + (nm - am)) / len)
    while k > 0 and period_start(anchorMs, unit, len, k) > nowMs do k = k - 1 end
    while period_start(anchorMs, unit, len, k + 1) <= nowMs do k = k + 1 end
  end
  return k, period_start(anchorMs, unit, len, k), period_start(anchorMs, unit, len, k + 1)
end
