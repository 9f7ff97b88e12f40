"""The stand-in model: an OpenAI-compatible chat endpoint on loopback with a fixed temperament
(gullible, obedient), so the injection and poisoning labs and lessons 06 and 08 can show what a
model that obeys what it reads would do, offline and deterministically. It is a responder's
counterpart, not a teaching widget: labs and lessons both use it, so it has a room of its own."""
