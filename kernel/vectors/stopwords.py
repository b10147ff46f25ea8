"""Stopword lists of the BM25 recipe: the Snowball project's lists as distributed by NLTK.

They are the lists Qdrant uses for ``Language.English`` / ``Language.Italian`` (Qdrant Edge's own
``Bm25`` and server-side BM25) and that fastembed's ``Qdrant/bm25`` model ships, so sparse vectors
computed here equal theirs. ``tests/kernel/vectors/test_bm25.py`` proves it against Qdrant Edge.

Source: Snowball stop lists (snowballstem.org, BSD-3-Clause), English in NLTK's 179-word form.
Entries with an apostrophe never match (the tokenizer splits on it); they are kept so each list is
the published one, word for word.
"""

from __future__ import annotations

from typing import Final

__all__ = ["STOPWORDS"]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


ENGLISH: Final = _words(
    """
    i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself
    yourselves he him his himself she she's her hers herself it it's its itself they them their
    theirs themselves what which who whom this that that'll these those am is are was were be been
    being have has had having do does did doing a an the and but if or because as until while of at
    by for with about against between into through during before after above below to from up down
    in out on off over under again further then once here there when where why how all any both
    each few more most other some such no nor not only own same so than too very s t can will just
    don don't should should've now d ll m o re ve y ain aren aren't couldn couldn't didn didn't
    doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma mightn mightn't mustn mustn't
    needn needn't shan shan't shouldn shouldn't wasn wasn't weren weren't won won't wouldn wouldn't
    """
)

ITALIAN: Final = _words(
    """
    ad al allo ai agli all agl alla alle con col coi da dal dallo dai dagli dall dagl dalla dalle
    di del dello dei degli dell degl della delle in nel nello nei negli nell negl nella nelle su
    sul sullo sui sugli sull sugl sulla sulle per tra contro io tu lui lei noi voi loro mio mia
    miei mie tuo tua tuoi tue suo sua suoi sue nostro nostra nostri nostre vostro vostra vostri
    vostre mi ti ci vi lo la li le gli ne il un uno una ma ed se perché anche come dov dove che chi
    cui non più quale quanto quanti quanta quante quello quelli quella quelle questo questi questa
    queste si tutto tutti a c e i l o ho hai ha abbiamo avete hanno abbia abbiate abbiano avrò
    avrai avrà avremo avrete avranno avrei avresti avrebbe avremmo avreste avrebbero avevo avevi
    aveva avevamo avevate avevano ebbi avesti ebbe avemmo aveste ebbero avessi avesse avessimo
    avessero avendo avuto avuta avuti avute sono sei è siamo siete sia siate siano sarò sarai sarà
    saremo sarete saranno sarei saresti sarebbe saremmo sareste sarebbero ero eri era eravamo
    eravate erano fui fosti fu fummo foste furono fossi fosse fossimo fossero essendo faccio fai
    facciamo fanno faccia facciate facciano farò farai farà faremo farete faranno farei faresti
    farebbe faremmo fareste farebbero facevo facevi faceva facevamo facevate facevano feci facesti
    fece facemmo faceste fecero facessi facesse facessimo facessero facendo sto stai sta stiamo
    stanno stia stiate stiano starò starai starà staremo starete staranno starei staresti starebbe
    staremmo stareste starebbero stavo stavi stava stavamo stavate stavano stetti stesti stette
    stemmo steste stettero stessi stesse stessimo stessero stando
    """
)

STOPWORDS: Final = {"en": ENGLISH, "it": ITALIAN}
"""Stopwords by workspace language code."""
