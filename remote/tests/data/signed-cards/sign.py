"""Makes this folder's cards, signed by the official A2A SDK's own signing utilities
(a2a-sdk 1.3.0, `a2a.utils.signing.create_agent_card_signer`), and the JWKS of their
public keys. Run with the tests' a2a-sdk venv:

    $STANDIN_CACHE/venv-a2a-sdk/bin/python sign.py

Each run makes new keys: the cards and jwks.json change together.
"""

import json

from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from google.protobuf.json_format import MessageToDict
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from a2a.utils.signing import create_agent_card_signer


def card():
    return AgentCard(
        name="Widget agent (a2a-sdk)",
        description="Asks one question, then works and completes.",
        supported_interfaces=[
            AgentInterface(url="https://agent.example/", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        version="0.0.1",
        capabilities=AgentCapabilities(streaming=True, push_notifications=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="widget", name="Build widget", description="Builds a widget: ünïcode ✓", tags=["demo"])],
    )


def public_jwk(algorithm, key, kid):
    jwk = json.loads(algorithm.to_jwk(key.public_key()))
    jwk["kid"] = kid
    return jwk


def main():
    keys = {
        "es256": (ec.generate_private_key(ec.SECP256R1()), "ES256", ECAlgorithm),
        "rs256": (rsa.generate_private_key(public_exponent=65537, key_size=2048), "RS256", RSAAlgorithm),
        "eddsa": (ed25519.Ed25519PrivateKey.generate(), "EdDSA", OKPAlgorithm),
    }
    jwks = []
    for name, (key, alg, algorithm) in keys.items():
        kid = f"{name}-1"
        signed = create_agent_card_signer(key, {"kid": kid, "alg": alg, "typ": "JOSE"})(card())
        with open(f"signed-{name}.json", "w") as out:
            json.dump(MessageToDict(signed), out, indent=1, ensure_ascii=False)
            out.write("\n")
        jwks.append(public_jwk(algorithm, key, kid))
    with open("jwks.json", "w") as out:
        json.dump({"keys": jwks}, out, indent=1)
        out.write("\n")
    other = ec.generate_private_key(ec.SECP256R1())
    with open("other-jwks.json", "w") as out:
        json.dump({"keys": [public_jwk(ECAlgorithm, other, "other-1")]}, out, indent=1)
        out.write("\n")


if __name__ == "__main__":
    main()
