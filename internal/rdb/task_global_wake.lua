-- global_wake: wake the workers a queue's global concurrency held back, if
-- any waits (a fetch refused for it set the flag).
--
-- KEYS[1]  the queue's live settings (config hash)
-- ARGV[1]  the queue's cancel channel (KeySpace.TaskCancel)
-- ARGV[2]  the message that wakes the fetchers (ResumeMessage)
--
-- Returns 1 when it woke them, else 0.
if redis.call('HDEL', KEYS[1], 'gwait') == 1 then
  redis.call('PUBLISH', ARGV[1], ARGV[2])
  return 1
end
return 0
