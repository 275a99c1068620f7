"""Discord's shapes (from the seam) as gsv's peers.

A DM is peer `dm` with the DM channel's id (the author is the sender, and the id pairing
approves); a server channel is peer `channel`; a thread is peer `thread` whose id and
`thread_id` are the thread's own id (a Discord thread is a channel, so each thread is its
own conversation)."""

from __future__ import annotations

from gsv_core.channels.base import Peer
from gsv_core.channels.discord.seam import DiscordMessage
from gsv_core.channels.discord.seam import DiscordPress


def peer_of(message: DiscordMessage) -> Peer:
    if message.kind == "dm":
        return Peer("dm", message.channel_id, message.author.name, message.author.handle)
    thread = message.channel_id if message.kind == "thread" else None
    return Peer(message.kind, message.channel_id, message.channel_name, thread_id=thread)


def press_peer_of(press: DiscordPress) -> Peer:
    """The peer of the message whose button was pressed."""
    if press.kind == "dm":
        return Peer("dm", press.channel_id, press.user.name, press.user.handle)
    thread = press.channel_id if press.kind == "thread" else None
    return Peer(press.kind, press.channel_id, press.channel_name, thread_id=thread)
